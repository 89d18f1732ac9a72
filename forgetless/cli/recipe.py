"""``forgetless run RECIPE [--scale cpu|paper] [--set key=value ...] [--out DIR] [--data-dir DIR]``: run a
recipe file or a built-in recipe by name (``forgetless.recipes``; ``forgetless recipes`` lists them)
— one compression run, a sweep or a speed profile — and save its fully resolved recipe beside the
results (``model/recipe.yaml`` for a run, ``recipe.yaml`` for a sweep or profile), so
``forgetless run OUT/model/recipe.yaml`` reproduces it. Light at import time: ``--check`` loads no
torch; the job runs through ``jobs.py``."""
from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import ConfigError
from ..recipes import load_recipe, resolved
from .parser import with_data_read


def run_recipe(path, scale: str | None = None, sets=(), out: str | None = None, check: bool = False,
               data_dir: str | None = None):
    """Load, resolve and run a recipe; returns (resolved recipe as plain data, report card / sweep
    summary / None); with ``check`` nothing runs."""
    sets = list(sets)
    if out:
        sets.append(("out", out))
    recipe = load_recipe(path, scale, sets)
    if data_dir:
        if recipe["command"] == "profile":
            raise ConfigError("--data-dir: does not apply to a profile recipe")
        recipe = load_recipe(path, scale, sets + [("task.data_dir", data_dir)])
    if recipe["command"] != "profile":
        recipe["config"] = with_data_read(recipe["config"])
    if "out" not in recipe:
        recipe["out"] = f"forgetless-out/{recipe.get('name') or Path(path).stem}-{recipe.get('scale', 'cpu')}"
    plain = resolved(recipe)
    if check:
        return plain, None
    from . import jobs  # the pipeline (torch, transformers): imported when a recipe runs, not for --check

    return plain, jobs.run_resolved(recipe)


def cmd_run(args, config=None) -> int:
    plain, _ = run_recipe(args.recipe, args.scale, args.sets, args.out, args.check, data_dir=args.data_dir)
    if args.check:
        print(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True), end="")
        return 0
    out = Path(plain["out"])
    saved = out / "model" / "recipe.yaml" if plain["command"] == "compress" else out / "recipe.yaml"
    print(f"done: {out} (report: {out / ('report.md' if plain['command'] == 'compress' else 'sweep.md')}; "
          f"resolved recipe: {saved})")
    return 0
