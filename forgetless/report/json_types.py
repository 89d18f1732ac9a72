"""JSON for frozen dataclasses, from their type hints: ``to_json`` (a dataclass → plain JSON values),
``from_json`` (plain JSON → the dataclass, every key and type checked) and ``json_schema`` (the JSON Schema,
draft 2020-12, that ``from_json`` enforces). The report card's sections (``report/card_types.py``) are such
dataclasses; the schema shipped beside them (``report/report.schema.json``) is generated here.

Types understood: ``str``, ``int``, ``float`` (an ``int`` is a valid ``float``, as in JSON; a float is
finite: ``NaN`` / ``Infinity``, which Python's ``json`` reads, are refused), ``bool``, ``Any``,
``Literal[...]``, ``X | None``, ``list[X]``, ``dict[str, X]``, nested dataclasses, and ``Annotated[X, ...]``
with a ``Bounds`` (a number's range: ``Fraction`` in [0, 1], ``Percent`` in [0, 100], ``Count`` ≥ 0,
``NonNegative``) or a ``Keys`` (an open JSON object whose named keys, when present, have the given types).
A field whose metadata says ``omit`` is left out of the JSON when it is ``None`` (and may be absent when read).
"""
from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Annotated, Any, Literal, get_args, get_origin

from ..errors import DataError

OMIT = {"omit": True}  # field(default=None, metadata=OMIT): absent from the JSON when None


class CardTypeError(DataError, ValueError):
    """A JSON value that does not fit its dataclass: the path of the first wrong value and why (a
    ``ForgetlessError``, and a ``ValueError`` as before)."""


@dataclasses.dataclass(frozen=True)
class Bounds:
    """The range of a number (``low`` / ``high`` included; None: unbounded on that side)."""
    low: float | None = None
    high: float | None = None

    def check(self, value, path: str) -> None:
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            raise CardTypeError(f"{path}: {value!r} is out of range; expected {self.describe()}")

    def describe(self) -> str:
        if self.high is None:
            return f"a number >= {self.low:g}"
        return f"a number in [{self.low:g}, {self.high:g}]"

    def schema(self) -> dict:
        return {key: bound for key, bound in (("minimum", self.low), ("maximum", self.high)) if bound is not None}


@dataclasses.dataclass(frozen=True)
class Keys:
    """An open JSON object (any other key, any value) whose keys named here, when present, have these
    types (``(("n", Count), ("accuracy", Fraction | None))``)."""
    known: tuple

    def check(self, value: dict, path: str) -> None:
        for key, hint in self.known:
            if key in value:
                _read(hint, value[key], f"{path}.{key}")

    def schema(self, defs: dict) -> dict:
        return {"properties": {key: _schema(hint, defs) for key, hint in self.known}}


Fraction = Annotated[float, Bounds(0, 1)]        # an accuracy, a share, a confidence
Percent = Annotated[float, Bounds(0, 100)]       # ROUGE, METEOR
NonNegative = Annotated[float, Bounds(0)]        # a ratio, epochs, a time
Count = Annotated[int, Bounds(0)]                # n, a size, a seed


def to_json(value, hint=Any):
    """Plain JSON values (dict, list, str, int, float, bool, None) of a dataclass tree, each number as its type
    hint says (a ``float`` field holding ``3`` is written ``3.0``, as ``from_json`` reads it back)."""
    while get_origin(hint) in (Annotated, typing.Union, types.UnionType):  # Fraction | None → float
        options = [a for a in get_args(hint) if a is not type(None)]
        hint = get_args(hint)[0] if get_origin(hint) is Annotated else options[0] if len(options) == 1 else Any
    inner = get_args(hint)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = typing.get_type_hints(type(value), include_extras=True)
        return {f.name: to_json(getattr(value, f.name), hints[f.name]) for f in dataclasses.fields(value)
                if getattr(value, f.name) is not None or not f.metadata.get("omit")}
    if isinstance(value, dict):
        return {key: to_json(item, inner[1] if get_origin(hint) is dict else Any) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item, inner[0] if get_origin(hint) is list else Any) for item in value]
    return float(value) if hint is float and type(value) is int else value


def from_json(cls, data, path: str | None = None):
    """``cls`` (a dataclass) built from ``data``; a ``CardTypeError`` naming the first key or value that
    does not fit (an unknown key, a missing one, a wrong type), its path rooted at ``path`` (default: the
    class name in lower case, ``card.seed``)."""
    return _read(cls, data, path or cls.__name__.lower())


def _read(hint, data, path: str):
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return data
    if origin is Annotated:
        value = _read(args[0], data, path)
        for rule in args[1:]:
            rule.check(value, path)
        return value
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _read(option, data, path)
            except CardTypeError as exc:
                errors.append(str(exc))
        raise CardTypeError(errors[0] if len(errors) == 1 else f"{path}: {_shown(data)} fits none of "
                            f"{', '.join(_name(o) for o in options)}")
    if origin is Literal:
        if data not in args:
            raise CardTypeError(f"{path}: {_shown(data)} is not one of {', '.join(map(repr, args))}")
        return data
    if origin is list:
        _expect(isinstance(data, list), path, data, "a list")
        return [_read(args[0], item, f"{path}[{i}]") for i, item in enumerate(data)]
    if origin is dict:
        _expect(isinstance(data, dict), path, data, "an object")
        return {key: _read(args[1], item, f"{path}.{key}") for key, item in data.items()}
    if dataclasses.is_dataclass(hint):
        return _read_dataclass(hint, data, path)
    checks = {str: lambda v: isinstance(v, str), bool: lambda v: isinstance(v, bool),
              int: lambda v: isinstance(v, int) and not isinstance(v, bool),
              float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}
    _expect(checks[hint](data), path, data, _name(hint))
    if hint is float:
        _expect(math.isfinite(data), path, data, "a finite number")
        return float(data)
    return data


def _read_dataclass(cls, data, path: str):
    _expect(isinstance(data, dict), path, data, "an object")
    hints = typing.get_type_hints(cls, include_extras=True)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise CardTypeError(f"{path}: unknown key(s) {', '.join(unknown)}; {cls.__name__} has: {', '.join(fields)}")
    values = {}
    for name, f in fields.items():
        if name not in data:
            if _required(f):
                raise CardTypeError(f"{path}: missing {name!r} ({cls.__name__})")
            continue
        values[name] = _read(hints[name], data[name], f"{path}.{name}")
    try:
        return cls(**values)
    except ValueError as exc:  # the dataclass's own checks (__post_init__)
        raise CardTypeError(f"{path}: {exc}") from None


def _required(f: dataclasses.Field) -> bool:
    """Every field is in the JSON but those marked ``OMIT`` (left out when None)."""
    return not f.metadata.get("omit")


def _expect(ok: bool, path: str, data, what: str) -> None:
    if not ok:
        raise CardTypeError(f"{path}: expected {what}, got {_shown(data)}")


def _shown(data) -> str:
    text = repr(data)
    return f"{type(data).__name__} {text[:60]}{'…' if len(text) > 60 else ''}"


def _name(hint) -> str:
    return getattr(hint, "__name__", str(hint))


def json_schema(cls, schema_id: str, title: str) -> dict:
    """The JSON Schema of ``cls`` and the dataclasses it holds (each once, under ``$defs``)."""
    defs: dict[str, dict] = {}
    _schema(cls, defs)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id, "title": title,
            **defs.pop(cls.__name__), "$defs": dict(sorted(defs.items()))}


def _schema(hint, defs: dict) -> dict:
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return {}
    if origin is Annotated:
        schema = _schema(args[0], defs)
        for rule in args[1:]:
            schema.update(rule.schema(defs) if isinstance(rule, Keys) else rule.schema())
        return schema
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [_schema(a, defs) for a in args]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list:
        return {"type": "array", "items": _schema(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema(args[1], defs)}
    if hint is type(None):
        return {"type": "null"}
    if dataclasses.is_dataclass(hint):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # placeholder: a dataclass may hold itself
            hints = typing.get_type_hints(hint, include_extras=True)
            fields = dataclasses.fields(hint)
            defs[hint.__name__] = {
                "type": "object", "description": " ".join((hint.__doc__ or "").split()),
                "properties": {f.name: _schema(hints[f.name], defs) for f in fields},
                "required": [f.name for f in fields if _required(f)],
                "additionalProperties": False}
        return {"$ref": f"#/$defs/{hint.__name__}"}
    return {"type": {str: "string", int: "integer", float: "number", bool: "boolean"}[hint]}
