"""Recipe files: load, validate, resolve and save.

A recipe is one YAML mapping: the config tree of its command (``forgetless.config``: ``RunConfig``
for ``compress``, ``SweepConfig`` for ``sweep``, ``ProfileConfig`` for ``profile``) written nested
(``train: {learning_rate: 1e-4}``), as dotted keys (``train.learning_rate: 1e-4``) or as the flat keys
of the command-line flags (``lr: 1e-4``, ``sparsity: 0.4``, ``objective_lam: 0.9``; every recipe and
``model/recipe.yaml`` written before the tree existed uses those). ``forgetless.tree`` reads all
three. Besides the options a recipe holds:

- ``command``: ``compress`` (one run, the default), ``sweep`` (objectives × levels × seeds) or
  ``profile`` (the encoder-decoder speed profile); ``out``: the output folder;
- ``name``, ``paper`` (the table or figure it reproduces), ``description``, ``data`` (where the
  paper's data lives, e.g. hub ids of sets a task option cannot name);
- ``scales``: ``{paper: {...}, cpu: {...}}``, option values that override the common ones at that
  scale, plus ``changes`` (what the scale changes from the paper) and ``needs`` (GPU, network …).

Unknown keys and wrong types are :class:`ConfigError` naming the key and the file (or ``--set``).
The *resolved* recipe (one scale, the whole tree with its final values) is what ``resolve`` returns,
``forgetless run --check`` prints and every run saves; running the saved file gives the same run.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from .. import tree
from ..config import ProfileConfig, RunConfig, SweepConfig
from ..errors import ConfigError
from .catalog import find_recipe
from .dump import drop_empty, dump_recipe  # noqa: F401  (dump_recipe: recipes/__init__.py)

CONFIGS = {"compress": RunConfig, "sweep": SweepConfig, "profile": ProfileConfig}
COMMANDS = tuple(CONFIGS)
SCALES = ("paper", "cpu")
META = ("name", "paper", "description", "command", "scale", "changes", "needs", "data", "out", "threads")
IGNORED = ("overwrite", "trust_remote_code", "push_to_hub")  # command-line switches in older saved recipes


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


def load_recipe(path: str | Path, scale: str | None = None, sets=()) -> dict:
    """Read a recipe file or a built-in recipe by name (``catalog.py``), pick ``scale`` and apply
    ``sets`` (``[(key, value)]`` or ``["key=value"]``); returns the resolved recipe: its meta keys
    and ``config``, the built config tree."""
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
    return validate_recipe(raw, str(path), scale, sets)


def validate_recipe(raw: dict, source: str = "<recipe>", scale: str | None = None, sets=()) -> dict:
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
    sets = [parse_set(item) if isinstance(item, str) else item for item in sets]
    for key, value in sets:
        if key == "command" and value != (raw.get("command") or "compress"):
            raise ConfigError(f"--set command={value}: a recipe's command is {raw.get('command') or 'compress'} "
                              f"({source}); --set changes its options, not what it runs")
    command = raw.get("command") or "compress"
    if command not in CONFIGS:
        raise ConfigError(f"{source}: command must be one of {', '.join(COMMANDS)}, got {command!r}")
    cls = CONFIGS[command]
    values = {k: v for k, v in raw.items() if k not in META and k not in IGNORED}
    tree.build(cls, values, source)  # the file alone: its errors name the file
    for key, value in sets:
        if key in META:
            raw[key] = value
        else:
            values[key] = value
    config = tree.build(cls, values, "--set") if sets else tree.build(cls, values, source)
    recipe = {"command": command, **{k: raw[k] for k in META if k in raw and k != "command"}}
    return {**recipe, "config": config}


def resolved(recipe: dict) -> dict:
    """The resolved recipe as plain data for YAML: meta keys, then the whole config tree."""
    meta = {k: v for k, v in recipe.items() if k != "config"}
    return {**meta, **drop_empty(tree.to_recipe(recipe["config"]))}
