"""Recipe files: load, validate, resolve and save.

A recipe is one YAML mapping. Its keys are the command's own option names, exactly as the
subcommand's argparse ``dest`` (``--train-size`` ↔ ``train_size``, ``--lr`` ↔ ``lr``, a method
option ``--sparsity`` ↔ ``sparsity``, an objective option ``--objective-lam`` ↔ ``objective_lam``),
so a recipe key, a CLI flag and a ``--set`` override are one vocabulary; the one mapping from those
names to config fields (``lr`` → ``TrainConfig.learning_rate`` …) stays in ``cli/options.py`` and
``cli/commands.py``. Besides option keys a recipe holds:

- ``command``: ``compress`` (one run, the default), ``sweep`` (objectives × levels × seeds) or
  ``profile`` (the encoder-decoder speed profile);
- ``name``, ``paper`` (the table or figure it reproduces), ``description``, ``data`` (where the
  paper's data lives, e.g. hub ids of sets a task option cannot name);
- ``scales``: ``{paper: {...}, cpu: {...}}``, option values that override the common ones at that
  scale, plus ``changes`` (what the scale changes from the paper) and ``needs`` (GPU, network …).

Unknown keys and wrong types are :class:`ConfigError` naming the key and the file. The *resolved*
recipe (one scale, every option with its final value, method / objective configs filled with
their defaults) is what :func:`recipe_from_args` returns and ``forgetless run`` saves; running the
saved file again gives the same run.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
from pathlib import Path

import yaml

from ..data.registry import DATA_DIR_ENV
from ..errors import ConfigError
from .dump import _plain, dump_recipe  # noqa: F401

COMMANDS = ("compress", "sweep", "profile")
SCALES = ("paper", "cpu")
META = ("name", "paper", "description", "command", "scale", "changes", "needs", "data")
# options given on the command line as comma-separated text; a recipe may write them as YAML lists
COMMA = ("objectives", "seeds", "levels", "eval_sets", "labels", "seq_lengths", "head_fractions", "ffn_fractions")
NOT_RECIPE = ("help", "command", "verbose")


def schema_from_parser(parser: argparse.ArgumentParser, owners: dict, command: str):
    """(subparser, {dest: action}, {"method": owners, "objective": owners}) of a subcommand of the
    ``forgetless`` parser (``cli.build_parser()``): a recipe's keys are exactly the command's flags."""
    if command not in COMMANDS:
        raise ConfigError(f"command must be one of {', '.join(COMMANDS)}, got {command!r}")
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    actions = {a.dest: a for a in subs[command]._actions if a.dest not in NOT_RECIPE}
    own: dict = {}
    if command == "compress":
        own = {"method": owners["method"], "objective": owners["objective"]}
    elif command == "sweep":
        own = {"method": owners["sweep_method"], "objective": owners["objective"]}
    return subs[command], actions, own


def _number(value, cast, where):
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, str):  # YAML 1.1 reads 2e-5 as text
        try:
            return cast(float(value)) if cast is int and float(value).is_integer() else cast(value)
        except ValueError:
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
    if cast is int and not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
        raise ConfigError(f"{where}: expected an integer, got {value!r}")
    if not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    return cast(value)


def check_value(key: str, value, action: argparse.Action, source: str):
    """``value`` converted to what the option takes; a wrong type is an error naming key and file."""
    where = f"{source}: key {key!r}"
    if value is None:
        return None
    boolean = getattr(action.type, "__name__", "") == "parse_bool"  # cli.options.parse_bool
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)) or boolean:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(action, argparse._AppendAction):  # NAME=VALUE pairs, e.g. challenge sets of the files task
        if isinstance(value, dict):
            value = [f"{k}={v}" for k, v in value.items()]
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: expected a mapping NAME: VALUE or a list of NAME=VALUE, got {value!r}")
        return value
    cast = action.type
    if cast in (int, float):
        value = _number(value, cast, where)
    elif cast in (None, str):
        if key in COMMA and (value == [] or (isinstance(value, str) and not value.strip(", "))):
            raise ConfigError(f"{where}: an empty list; give at least one value")
        if key in COMMA and isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        elif key in COMMA and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected text, got {value!r}")
    else:  # a list-valued config field (comma-separated on the command line)
        text = ",".join(str(v) for v in value) if isinstance(value, (list, tuple)) else str(value)
        try:
            value = cast(text)
        except (TypeError, ValueError):
            raise ConfigError(f"{where}: expected a list of values, got {value!r}") from None
    if action.choices is not None and value not in action.choices:
        raise ConfigError(f"{where}: must be one of {', '.join(map(str, action.choices))}, got {value!r}")
    return value


def parse_set(item: str) -> tuple[str, object]:
    """``key=value`` of ``--set``; the value is read as YAML (``0.4`` → number, ``[0, 1]`` → list)."""
    if "=" not in item:
        raise ConfigError(f"--set expects key=value, got {item!r}")
    key, text = item.split("=", 1)
    try:
        value = yaml.safe_load(text) if text.strip() else ""
    except yaml.YAMLError:
        value = text
    return key.strip(), value


MAX_RECIPE_BYTES = 1_000_000
MAX_NODES = 10_000  # YAML nodes after alias expansion: a "billion laughs" file is refused, not expanded


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys (YAML keeps the last one silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (str, int, float, bool)) and key in seen:
                raise ConfigError(f"{self.source}: key {key!r} appears twice (line {key_node.start_mark.line + 1}); "
                                  "keep one")
            seen.add(key)
        return super().construct_mapping(node, deep)


def _expanded_size(node, memo: dict, limit: int) -> int:
    """Nodes of ``node`` with every alias expanded (memoised per node: aliases share node objects)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = limit + 1  # a cycle counts as too large
    size = 1
    if isinstance(node, yaml.SequenceNode):
        for child in node.value:
            size += _expanded_size(child, memo, limit)
            if size > limit:
                break
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            size += _expanded_size(key, memo, limit) + _expanded_size(value, memo, limit)
            if size > limit:
                break
    memo[id(node)] = size
    return size


def read_yaml(text: str, source: str):
    """One YAML document, strictly: no duplicate keys, at most ``MAX_NODES`` nodes once aliases
    are expanded; every problem a ``ConfigError`` naming ``source``."""
    loader = _StrictLoader(text)
    loader.source = source
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}, MAX_NODES) > MAX_NODES:
            raise ConfigError(f"{source}: more than {MAX_NODES} values once its aliases (*name) are expanded; "
                              "a recipe that large is refused")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML ({str(exc).splitlines()[0]})") from None
    finally:
        loader.dispose()


def load_recipe(path: str | Path, schema, scale: str | None = None, sets=()) -> dict:
    """Read a recipe file or a built-in recipe by name (``catalog.py``), pick ``scale`` and apply ``sets`` (``[(key, value)]`` or ``["key=value"]``); returns the
    validated flat recipe (meta keys + option values). ``schema(command)`` gives a command's
    (subparser, actions, owners) (``cli.recipe.schema``)."""
    from .catalog import find_recipe

    path = find_recipe(path)  # a file, else a built-in recipe by name
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise ConfigError(f"recipe {path}: {path.stat().st_size} bytes; a recipe is a small YAML file "
                          f"(at most {MAX_RECIPE_BYTES} bytes)")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"recipe {path}: not a UTF-8 text file (byte {exc.start}); give a YAML recipe") from None
    raw = read_yaml(text, str(path))
    if not isinstance(raw, dict):
        raise ConfigError(f"recipe {path}: expected a mapping of keys to values at the top level")
    return validate_recipe(raw, schema, str(path), scale, sets)


def validate_recipe(raw: dict, schema, source: str = "<recipe>", scale: str | None = None, sets=()) -> dict:
    raw = dict(raw)
    scales = raw.pop("scales", None) or {}
    if not isinstance(scales, dict) or set(scales) - set(SCALES):
        raise ConfigError(f"{source}: key 'scales' must map {' / '.join(SCALES)} to option values, got {scales!r}")
    if scales:
        scale = scale or "cpu"
        if scale not in scales:
            raise ConfigError(f"{source}: no scale {scale!r} (it has {', '.join(scales)})")
        if not isinstance(scales[scale], dict):
            raise ConfigError(f"{source}: scale {scale!r} must be a mapping of option values")
        raw = {**raw, **scales[scale], "scale": scale}
    elif scale is not None and raw.get("scale") is None:
        raise ConfigError(f"--scale {scale}: {source} has no scales; drop --scale")
    elif scale is not None and raw.get("scale") != scale:
        raise ConfigError(f"--scale {scale}: {source} is a resolved recipe of scale {raw['scale']!r}")
    origin = {key: source for key in raw}
    for item in sets:
        key, value = parse_set(item) if isinstance(item, str) else item
        raw[key], origin[key] = value, "--set"
    if "fine_tune" in raw and "recovery" not in raw:  # old name of recovery (methods/base.py)
        from ..methods.base import legacy_recovery
        origin["recovery"] = origin.pop("fine_tune")
        raw["recovery"] = legacy_recovery(raw.pop("fine_tune"))
    command = raw.get("command") or "compress"
    _, actions, owners = schema(command)
    recipe: dict = {"command": command}
    for key, value in raw.items():
        if key in META:
            if key != "command":
                recipe[key] = value
            continue
        if key not in actions:
            close = difflib.get_close_matches(key, list(actions) + list(META), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{origin[key]}: unknown key {key!r} for command {command}{hint}")
        value = check_value(key, value, actions[key], origin[key])
        if value is not None:
            recipe[key] = value
    _check_owners(recipe, actions, owners, origin)
    return recipe


def _check_owners(recipe: dict, actions: dict, owners: dict, origin: dict) -> None:
    """A method option must belong to the recipe's method (objective option: to its objective(s))."""
    from ..methods import METHODS
    from ..registry import OBJECTIVES

    if not owners:
        return
    method = recipe.get("method", actions["method"].default)
    METHODS.get(method)
    if recipe["command"] == "sweep":
        objectives = [x.strip() for x in recipe.get("objectives", actions["objectives"].default).split(",")]
    else:
        objectives = [recipe.get("objective") or METHODS.get(method).default_objective]
    for name in objectives:
        OBJECTIVES.get(name)
    for role, chosen in (("method", [method]), ("objective", objectives)):
        for key, entries in owners[role].items():
            if key in recipe and not set(chosen) & set(entries):
                raise ConfigError(f"{origin.get(key, '<recipe>')}: key {key!r} does not apply to {role} "
                                  f"{', '.join(chosen)} (it belongs to {', '.join(entries)})")


def namespace_from_recipe(recipe: dict, schema) -> tuple[argparse.Namespace, dict]:
    """The argparse namespace a command line with the recipe's options would give, and the owners
    table of method / objective options (as ``cli.main`` passes them to the commands)."""
    sub, actions, owners = schema(recipe["command"])
    args = sub.parse_args([])
    for key, action in actions.items():
        if not hasattr(args, key) and action.default is not argparse.SUPPRESS:
            setattr(args, key, action.default)
    for key, value in recipe.items():
        if key in actions:
            setattr(args, key, value)
    args.command = recipe["command"]
    return args, owners


def recipe_from_args(args: argparse.Namespace, command: str, schema, meta: dict | None = None) -> dict:
    """The fully resolved recipe of a parsed command line: every option with its final value; the
    chosen method's and objective's configs with all their fields (defaults filled in)."""
    from ..methods import METHODS
    from ..registry import OBJECTIVES

    _, actions, owners = schema(command)
    recipe = {"command": command, **{k: v for k, v in (meta or {}).items() if k in META and k != "command"}}
    option_keys = {k for role in owners.values() for k in role}
    for key in actions:
        if key in option_keys:
            continue
        value = getattr(args, key, None)
        if key == "data_dir":  # the folder actually read: --data-dir, else $FORGETLESS_DATA_DIR (none: the hub)
            value = value or os.environ.get(DATA_DIR_ENV) or None
            value = str(Path(value).resolve()) if value and Path(value).is_dir() else value
        if value is not None and value != []:
            recipe[key] = _plain([_scalar(x) for x in value.split(",") if x.strip()]
                                 if key in COMMA and isinstance(value, str) else value)
    if owners:
        method = recipe["method"]
        level = {recipe["level_option"]: _first_number(recipe["levels"])} if command == "sweep" else {}
        given = {k: getattr(args, k) for k in owners["method"] if method in owners["method"][k]
                 and getattr(args, k, None) is not None}
        config = METHODS.make_config(method, {**given, **level})
        for f in dataclasses.fields(config) if config is not None else ():
            if f.name not in level and getattr(config, f.name) is not None:
                recipe[f.name] = _plain(getattr(config, f.name))
        objectives = recipe["objectives"] if command == "sweep" else [recipe.get("objective")]
        for key, entries in owners["objective"].items():
            value = getattr(args, key, None)
            if value is not None and set(objectives) & set(entries):
                recipe[key] = _plain(value)
        if command == "sweep":  # each objective's config with the options it takes (bad values fail here)
            for name in objectives:
                OBJECTIVES.make_config(name, {k[len("objective_"):]: recipe[k] for k, owners_ in
                                              owners["objective"].items() if k in recipe and name in owners_})
        if command == "compress":
            name = recipe.get("objective") or METHODS.get(method).default_objective
            recipe["objective"] = name
            given = {k[len("objective_"):]: recipe[k] for k in owners["objective"] if k in recipe}
            config = OBJECTIVES.make_config(name, given)
            for f in dataclasses.fields(config) if config is not None else ():
                if getattr(config, f.name) is not None:
                    recipe[f"objective_{f.name}"] = _plain(getattr(config, f.name))
    return recipe


def _first_number(levels):
    first = levels[0] if isinstance(levels, list) else str(levels).split(",")[0]
    value = float(first)
    return int(value) if value.is_integer() and "." not in str(first) else value


def _scalar(text: str):
    """``"0.4"`` → 0.4, ``"ce"`` → "ce" (items of a comma-separated option)."""
    value = yaml.safe_load(text.strip())
    return value if isinstance(value, (int, float, str)) and not isinstance(value, bool) else text.strip()
