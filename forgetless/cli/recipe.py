"""``forgetless run RECIPE [--scale cpu|paper] [--set key=value ...] [--out DIR] [--data-dir DIR]``: run a
recipe file or a built-in recipe by name (``forgetless.recipes``; ``forgetless recipes`` lists them)
— one compression run, a sweep or a speed profile — and save its fully
resolved recipe beside the results (``model/recipe.yaml`` for a run, ``recipe.yaml`` for a sweep or
profile), so ``forgetless run OUT/model/recipe.yaml`` reproduces it."""
from __future__ import annotations

from pathlib import Path


def run_recipe(path, scale: str | None, sets, out: str | None, check: bool, schema, data_dir: str | None = None):
    """Load, resolve and run a recipe; returns (resolved recipe, report card / sweep summary /
    None); with ``check`` nothing runs. ``schema(command)``: the command's options (the Python
    entry point ``forgetless.cli.run_recipe`` passes the CLI parser's)."""
    from ..recipes import load_recipe, namespace_from_recipe, recipe_from_args
    from ..recipes.load import META

    sets = list(sets)
    if out:
        sets.append(("out", out))
    recipe = load_recipe(path, schema, scale, sets)
    if data_dir:
        from ..errors import ConfigError

        if "data_dir" not in schema(recipe["command"])[1]:
            raise ConfigError(f"--data-dir does not apply to a {recipe['command']} recipe")
        recipe["data_dir"] = data_dir
    if "out" not in recipe:
        recipe["out"] = f"forgetless-out/{recipe.get('name') or Path(path).stem}-{recipe.get('scale', 'cpu')}"
    args, owners = namespace_from_recipe(recipe, schema)
    meta = {k: v for k, v in recipe.items() if k in META}
    resolved = recipe_from_args(args, recipe["command"], schema, meta)
    if check:
        return resolved, None
    run = {"compress": _compress, "sweep": _sweep, "profile": _profile}[recipe["command"]]
    return resolved, run(args, owners, resolved)


def _compress(args, owners, resolved):
    from ..pipeline import compress
    from .commands import run_config_from_args
    from .options import task_from_args

    return compress(task_from_args(args), run_config_from_args(args, owners), args.out, recipe=resolved)


def _sweep(args, owners, resolved):
    from .commands import sweep_from_args

    return sweep_from_args(args, owners, resolved)


def _profile(args, owners, resolved):
    from ..recipes.dump import dump_recipe
    from .commands import cmd_profile

    cmd_profile(args, {})
    dump_recipe(resolved, Path(args.out) / "recipe.yaml")


def cmd_run(args, owners=None) -> int:
    import yaml

    resolved, _ = run_recipe(args.recipe, args.scale, args.sets, args.out, args.check, owners["schema"],
                             data_dir=args.data_dir)
    if args.check:
        print(yaml.safe_dump(resolved, sort_keys=False, allow_unicode=True), end="")
        return 0
    out = Path(resolved["out"])
    saved = out / "model" / "recipe.yaml" if resolved["command"] == "compress" else out / "recipe.yaml"
    print(f"done: {out} (report: {out / ('report.md' if resolved['command'] == 'compress' else 'sweep.md')}; "
          f"resolved recipe: {saved})")
    return 0


def cmd_recipes(args, owners=None) -> int:
    """``forgetless recipes``: the built-in recipes, the command each runs and the paper table it reproduces."""
    from ..recipes.catalog import catalogue

    rows = catalogue()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['command']:<8} {row['paper']}")
    print(f"\n{len(rows)} recipes; scales: cpu (default) and paper. Run one: forgetless run NAME --scale cpu "
          "[--data-dir DIR]; see its options: forgetless run NAME --check")
    return 0
