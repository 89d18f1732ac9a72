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


NOT_PER_RUN = ("objectives", "seeds", "levels", "level_option", "teacher_epochs", "teacher_seed")


def sweep_run_recipe(sweep: dict, objective: str, objective_options: dict, level_option: str, level,
                     seed: int, teacher: str, out: str | Path) -> dict:
    """The ``compress`` recipe of one run of a resolved ``sweep`` recipe: the sweep's options
    without its grid and teacher settings (``NOT_PER_RUN``), this run's objective with only its own options, level and
    training seed; the sweep's data seed (the runs of a sweep share one data split); the sweep's
    teacher of that seed (so a rerun starts from the same teacher and gives the same card); and
    ``out`` (a fresh folder: the sweep's own run folder holds the original)."""
    data_seed = sweep.get("data_seed")
    run = {k: v for k, v in sweep.items() if k not in NOT_PER_RUN and not k.startswith("objective_")}
    run.update({"command": "compress", "objective": objective, level_option: _plain(level), "seed": seed,
                "data_seed": sweep.get("seed", 0) if data_seed is None else data_seed,
                "teacher": str(teacher), "out": str(out)})
    run.update({f"objective_{k}": _plain(v) for k, v in objective_options.items()})
    return run
