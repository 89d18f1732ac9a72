"""Methods stacked after the main one: ``RunConfig.then`` / CLI ``--then`` / recipe key ``then``.

Each entry is ``METHOD[:OPTION=VALUE,...]`` with the method's own option names, e.g.
``quantize:dtype=int8`` or ``truncate:layers=2``; the methods run in order on the model the
previous one returned (``--method heads --then quantize:dtype=bf16``: prune, fine-tune, then
quantize), so the card measures what the whole chain forgot and its compounded speedup.
"""
from __future__ import annotations

import dataclasses
import typing

from ..errors import ConfigError
from ..registry import METHODS


def _typed(cls: type, name: str, text: str):
    hint = typing.get_type_hints(cls).get(name, str)
    hint = next((a for a in typing.get_args(hint) if a is not type(None)), hint)
    if hint is bool:
        if text.lower() not in ("true", "false"):
            raise ConfigError(f"then: option {name} expects true or false, got {text!r}")
        return text.lower() == "true"
    try:
        return hint(text) if hint in (int, float) else text
    except ValueError as exc:
        raise ConfigError(f"then: option {name} expects {hint.__name__}, got {text!r}") from exc


def parse_then(spec: str):
    """A method instance from ``METHOD[:OPTION=VALUE,...]``; unknown names and options are errors."""
    name, _, rest = spec.partition(":")
    cls = METHODS.config_class(name.strip())
    fields = {f.name for f in dataclasses.fields(cls)} if cls else set()
    options = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"then: expected OPTION=VALUE in {spec!r}, got {item!r}")
        key = key.strip().replace("-", "_")
        options[key] = _typed(cls, key, value.strip()) if key in fields else value
    return METHODS.get(name.strip())(METHODS.make_config(name.strip(), options))


def resolve_then(specs: list[str]) -> list:
    return [parse_then(spec) for spec in specs or []]
