"""Writing a resolved recipe (YAML, atomically): a leaf module, so the pipeline and sweeps can save
recipes without importing the recipe loader (which builds the command-line parser)."""
from __future__ import annotations

from pathlib import Path

import yaml

from ..fsutil import atomic_write_text


def drop_empty(data):
    """Unset options (None, []) are left out of a written recipe: reading it back gives them again;
    tuples become lists (YAML-safe plain data)."""
    if isinstance(data, dict):
        return {k: drop_empty(v) for k, v in data.items() if v is not None and v != []}
    if isinstance(data, (list, tuple)):
        return [drop_empty(v) for v in data]
    return data


def dump_recipe(recipe: dict, path: str | Path) -> Path:
    """Write a resolved recipe (``forgetless run PATH`` reruns it)."""
    path = Path(path)
    recipe = drop_empty(recipe)
    header = ("# forgetless resolved recipe: every option of this run with its final value.\n"
              f"# Re-run: forgetless run {path}  (override: --set key=value)\n")
    atomic_write_text(path, header + yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True))
    return path
