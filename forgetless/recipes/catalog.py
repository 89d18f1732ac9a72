"""The recipes shipped inside the package (package data, ``forgetless/recipes/builtin/*.yaml``),
addressable by name: ``forgetless run rahp-table1`` works from any folder after ``pip install``;
``forgetless recipes`` lists them with the paper table or figure each reproduces.

A recipe argument is a file when one exists at that path, else the name of a built-in recipe
(with or without ``.yaml``); anything else is one error listing the built-in names."""
from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path

import yaml

from ..errors import ConfigError

FOLDER = "builtin"


def builtin_folder() -> Path:
    """The folder of the shipped recipe files."""
    return Path(str(resources.files("forgetless.recipes") / FOLDER))


def recipe_names() -> list[str]:
    return sorted(p.stem for p in builtin_folder().glob("*.yaml"))


def find_recipe(name_or_path: str | Path) -> Path:
    """A recipe file: ``name_or_path`` itself when it is a file, else the built-in recipe of that name."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    name = path.name[:-len(".yaml")] if path.name.endswith(".yaml") else path.name
    shipped = builtin_folder() / f"{name}.yaml"
    if str(path.parent) == "." and shipped.is_file():
        return shipped
    close = difflib.get_close_matches(name, recipe_names(), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"recipe {name_or_path} is neither a file nor a built-in recipe{hint}; built-in: "
                      f"{', '.join(recipe_names())} (list them with `forgetless recipes`)")


def catalogue() -> list[dict]:
    """Name, command, paper table / figure and scales of every built-in recipe."""
    rows = []
    for name in recipe_names():
        raw = yaml.safe_load((builtin_folder() / f"{name}.yaml").read_text(encoding="utf-8")) or {}
        rows.append({"name": name, "command": raw.get("command", "compress"), "paper": raw.get("paper", ""),
                     "scales": sorted(raw.get("scales") or {})})
    return rows
