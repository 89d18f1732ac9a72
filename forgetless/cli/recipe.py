"""``forgetless run RECIPE [--scale cpu|paper] [--set key=value ...] [--out DIR] [--data-dir DIR]``: run a
recipe file or a built-in recipe by name (``forgetless.recipes``; ``forgetless recipes`` lists them)
— one compression run, a sweep or a speed profile — and save its fully resolved recipe beside the
results (``model/recipe.yaml`` for a run, ``recipe.yaml`` for a sweep or profile), so
``forgetless run OUT/model/recipe.yaml`` reproduces it."""
from __future__ import annotations

from pathlib import Path


def run_recipe(path, scale: str | None = None, sets=(), out: str | None = None, check: bool = False,
               data_dir: str | None = None):
    """Load, resolve and run a recipe; returns (resolved recipe as plain data, report card / sweep
    summary / None); with ``check`` nothing runs."""
    from ..recipes import load_recipe, resolved

    sets = list(sets)
    if out:
        sets.append(("out", out))
    recipe = load_recipe(path, scale, sets)
    if data_dir:
        if recipe["command"] == "profile":
            from ..errors import ConfigError

            raise ConfigError("--data-dir does not apply to a profile recipe")
        recipe = load_recipe(path, scale, sets + [("task.data_dir", data_dir)])
    if recipe["command"] != "profile":
        from .commands import with_data_dir

        recipe["config"] = with_data_dir(recipe["config"])
    if "out" not in recipe:
        recipe["out"] = f"forgetless-out/{recipe.get('name') or Path(path).stem}-{recipe.get('scale', 'cpu')}"
    plain = resolved(recipe)
    if check:
        return plain, None
    if recipe.get("threads"):
        import torch

        torch.set_num_threads(int(recipe["threads"]))
    config, out = recipe["config"], recipe["out"]
    meta = {k: v for k, v in recipe.items() if k not in ("config", "command", "out")}
    from .commands import run_compress, run_profile_command, run_sweep_command

    if recipe["command"] == "compress":
        from ..data.tasks import task_from_config

        return plain, run_compress(task_from_config(config.task, config.seed), config, out, meta)
    if recipe["command"] == "sweep":
        return plain, run_sweep_command(config, out, meta)
    return plain, run_profile_command(config, out, meta=meta)


def cmd_run(args, config=None) -> int:
    import yaml

    plain, _ = run_recipe(args.recipe, args.scale, args.sets, args.out, args.check, data_dir=args.data_dir)
    if args.check:
        print(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True), end="")
        return 0
    out = Path(plain["out"])
    saved = out / "model" / "recipe.yaml" if plain["command"] == "compress" else out / "recipe.yaml"
    print(f"done: {out} (report: {out / ('report.md' if plain['command'] == 'compress' else 'sweep.md')}; "
          f"resolved recipe: {saved})")
    return 0


def cmd_recipes(args, config=None) -> int:
    """``forgetless recipes``: the built-in recipes, the command each runs and the paper table it reproduces."""
    from ..recipes.catalog import catalogue

    rows = catalogue()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['command']:<8} {row['paper']}")
    print(f"\n{len(rows)} recipes; scales: cpu (default) and paper. Run one: forgetless run NAME --scale cpu "
          "[--data-dir DIR]; see its options: forgetless run NAME --check")
    return 0
