"""Writing a resolved recipe (YAML, atomically): a leaf module, so the pipeline and sweeps can save
recipes without importing the recipe loader (which builds the command-line parser)."""
from __future__ import annotations

from pathlib import Path

import yaml

from ..fsutil import atomic_write_text


def _plain(value):
    """YAML-safe plain data (tuples → lists)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def dump_recipe(recipe: dict, path: str | Path) -> Path:
    """Write a resolved recipe (``forgetless run PATH`` reruns it)."""
    path = Path(path)
    header = ("# forgetless resolved recipe: every option of this run with its final value.\n"
              f"# Re-run: forgetless run {path}  (override: --set key=value)\n")
    atomic_write_text(path, header + yaml.safe_dump(_plain(recipe), sort_keys=False, allow_unicode=True))
    return path


SWEEP_ONLY = ("objectives", "seeds", "levels", "level_option")


def sweep_run_recipe(sweep: dict, objective: str, objective_options: dict, level_option: str, level,
                     seed: int, teacher: str, out: str | Path) -> dict:
    """The ``compress`` recipe of one run of a resolved ``sweep`` recipe: the sweep's options
    without its grid (``SWEEP_ONLY``), this run's objective with only its own options, level, seed
    and output folder, and the sweep's teacher of that seed (so a rerun starts from the same
    teacher and gives the same card)."""
    run = {k: v for k, v in sweep.items() if k not in SWEEP_ONLY and not k.startswith("objective_")}
    run.update({"command": "compress", "objective": objective, level_option: _plain(level), "seed": seed,
                "teacher": str(teacher), "out": str(out)})
    run.update({f"objective_{k}": _plain(v) for k, v in objective_options.items()})
    return run
