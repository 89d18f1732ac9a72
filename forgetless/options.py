"""The option schema: configuration dataclasses whose fields carry their own flag, help, range and
choices (``option``), and the one set of functions that reads values into them from the command
line, a recipe (YAML) or Python, and checks every range in one place (``Config.__post_init__``).

Standard library only: importing a config module (``forgetless.config``, ``forgetless/methods/*/
config.py``) never imports torch, so ``--help`` and ``forgetless list`` start at once.

A field's *flag* is its name with dashes (``train_size`` → ``--train-size``) unless ``option(flag=)``
names another (``learning_rate`` → ``--lr``); an objective's fields are prefixed (``--objective-lam``).
The flag without dashes is also the field's flat recipe key (``lr``, ``objective_lam``), kept as the
alias layer of the config tree (``train.learning_rate``).
"""
from __future__ import annotations

import dataclasses
import functools
import numbers
import types
import typing
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar

from .errors import ConfigError, name_flag
from .ranges import check_number


def option(default: Any = MISSING, *, help: str = "", flag: str | None = None, low=None, high=None,
           low_open: bool = False, high_open: bool = False, choices=None, factory=None, cli: bool = True,
           negate: str | None = None, switch: bool = False, kinds: tuple[str, ...] | None = None):
    """A config field with its command-line metadata. ``low`` / ``high`` (``low_open`` / ``high_open``:
    strictly above ``low`` / below ``high``) and ``choices`` are checked whenever the config is built;
    ``cli=False`` keeps the field out of the command line (Python and recipes only); ``negate`` names
    a flag that sets a boolean field to False (``progress`` ← ``--no-progress``); ``switch``: a
    boolean flag that takes no value (``--clever``), where others take ``true`` / ``false``; ``kinds``:
    the model kinds the option applies to (another value than the default is an error for the others)."""
    metadata = {"help": help, "flag": flag, "low": low, "high": high, "low_open": low_open, "high_open": high_open,
                "choices": tuple(choices) if choices else None, "cli": cli, "negate": negate, "switch": switch,
                "kinds": tuple(kinds) if kinds else None}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass
class Config:
    """Base of every configuration dataclass: ranges and choices of its fields are checked when it
    is built, then ``check()`` (relations between fields)."""

    flag_prefix: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs) -> None:
        """Each option's flag and Python name go to ``errors.name_flag``: an error read from Python
        names ``learning_rate=``, on the command line ``--lr``."""
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if isinstance(value, dataclasses.Field) and value.metadata:
                meta = value.metadata
                flag = meta.get("flag") or cls.flag_prefix + name.replace("_", "-")  # flag_name, before @dataclass
                if meta.get("negate"):
                    name_flag(meta["negate"], f"{name}=False", switch=True)
                name_flag(flag, f"{name}=True" if meta.get("switch") else name, switch=bool(meta.get("switch")))

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata and isinstance(value, str) and hint_of(type(self), f.name)[1]:
                value = [value]  # one name where a list is expected: a list of one (as --targets re:.*q_proj)
                setattr(self, f.name, value)
            check_field(type(self), f, value)
        self.check()

    def check(self) -> None:
        """Checks between fields (override)."""

    @classmethod
    def flag(cls, name: str) -> str:
        f = next(f for f in dataclasses.fields(cls) if f.name == name)
        return "--" + flag_name(cls, f)


def flag_name(cls: type, f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or getattr(cls, "flag_prefix", "") + f.name.replace("_", "-")


@functools.lru_cache(maxsize=None)
def hint_of(cls: type, name: str):
    """``(base type, is_list)`` of a field: ``int | None`` → (int, False), ``list[str]`` → (str, True).
    Cached: a class's annotations are evaluated once (``typing.get_type_hints`` is slow, and every
    config built and every ``--help`` reads each field's hint)."""
    hint = _type_hints(cls)[name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0] if len(args) == 1 else hint
    if typing.get_origin(hint) in (list, tuple):
        return (typing.get_args(hint) or (str,))[0], True
    return hint, False


@functools.lru_cache(maxsize=None)
def _type_hints(cls: type) -> dict:
    return typing.get_type_hints(cls)


def check_field(cls: type, f: dataclasses.Field, value, flag: str | None = None) -> None:
    """``value`` in the field's choices and range; errors name ``flag`` (default: the field's own)."""
    meta = f.metadata
    if not meta or (value is None and type(None) in typing.get_args(_type_hints(cls)[f.name])):
        return
    flag = flag or "--" + flag_name(cls, f)
    if meta.get("switch"):
        flag = f.name + "="  # a flag that takes no value: Python names the field (asymmetric='yes': …)
    choices = meta.get("choices")
    hint, is_list = hint_of(cls, f.name)
    for item in (value if is_list and isinstance(value, (list, tuple)) else [value]):
        check_type(hint, item, flag)
        if choices and item not in choices:
            raise ConfigError(f"{flag} {item}: not one of {', '.join(map(str, choices))}")
        if (meta.get("low") is not None or meta.get("high") is not None) and hint in (int, float):
            check_number(flag, item, meta.get("low"), meta.get("high"),
                         integer=hint is int, low_open=meta.get("low_open", False),
                         high_open=meta.get("high_open", False))


EXPECTED = {int: "a whole number", float: "a number", bool: "True or False", str: "text"}


def check_type(hint, value, flag: str) -> None:
    """``value`` is of the field's type ``hint`` (a config built in Python: ``GptqConfig(bits='4')``); the
    command line and recipes read text into that type first (``coerce``). One ``ConfigError`` naming the
    flag, the value and its type; other hints (``Any``, unions, nested configs) are taken as given."""
    if hint is int:
        fits = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    elif hint is float:
        fits = isinstance(value, numbers.Real) and not isinstance(value, bool)
    elif hint is bool:
        fits = isinstance(value, bool)
    elif hint is str:
        fits = value is not None and not isinstance(value, (bool, numbers.Number, list, tuple, dict, set))
    else:
        return
    if not fits:
        got = "None" if value is None else f"{type(value).__name__} {value!r}"
        raise ConfigError(f"{flag}{'' if flag.endswith('=') else ' '}{value!r}: expected {EXPECTED[hint]}, got {got}")


# ----- reading values ------------------------------------------------------------------------------
def parse_bool(value) -> bool:
    """``true`` or ``false`` only (``1``, ``yes`` or ``ture`` are errors, not a guess)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ValueError(f"expected true or false, got {value!r}")


def _scalar(hint, value, where: str):
    if hint is bool:
        try:
            return parse_bool(value)
        except ValueError:
            raise ConfigError(f"{where}: expected true or false, got {value!r}") from None
    if hint in (int, float):
        if isinstance(value, bool):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        try:
            number = float(value) if isinstance(value, str) else value
        except ValueError:
            raise ConfigError(f"{where}: expected a number, got {value!r}") from None
        if not isinstance(number, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        if hint is int:
            if number != number or number in (float("inf"), float("-inf")) or not float(number).is_integer():
                raise ConfigError(f"{where}: expected a whole number, got {value!r}")
            return int(number)
        return float(number)
    if hint is str:
        if isinstance(value, (dict, list, tuple)) or isinstance(value, bool):
            raise ConfigError(f"{where}: expected text, got {value!r}")
        return str(value)
    return value  # Any / nested structures: taken as given


def coerce(cls: type, name: str, value, where: str | None = None):
    """``value`` (text from the command line, or a YAML / Python value) as field ``name`` of ``cls``
    takes it; a comma-separated text is a list for list fields. Errors name the flag."""
    f = next(x for x in dataclasses.fields(cls) if x.name == name)
    where = where or "--" + flag_name(cls, f)
    if value is None:
        return None
    hint, is_list = hint_of(cls, name)
    if is_list:
        if isinstance(value, str):
            value = [x.strip() for x in value.split(",") if x.strip()]
        elif not isinstance(value, (list, tuple)):
            value = [value]
        return [_scalar(hint, item, where) for item in value]
    return _scalar(hint, value, where)


def leaves(cls: type) -> list[dataclasses.Field]:
    """The option fields of a config class (those with metadata)."""
    return [f for f in dataclasses.fields(cls) if f.metadata]


def default_of(f: dataclasses.Field):
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return None


def build(cls: type, options: dict, what: str):
    """``cls(**options)`` with every value coerced; unknown keys are one error listing the valid ones."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise ConfigError(f"unknown option(s) for {what}: {', '.join(unknown)}; it accepts: "
                          f"{', '.join(sorted(n for n in names)) or 'nothing'}")
    values = {k: coerce(cls, k, v) if any(f.name == k and f.metadata for f in dataclasses.fields(cls)) else v
              for k, v in options.items() if v is not None}
    return cls(**values)


def as_dict(config) -> dict:
    """A config (tree) as plain data: nested configs as mappings, a method / objective config with
    its registered ``name`` first."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        data = {"name": config.name} if getattr(type(config), "name", None) else {}
        for f in dataclasses.fields(config):
            data[f.name] = as_dict(getattr(config, f.name))
        return data
    if isinstance(config, (list, tuple)):
        return [as_dict(x) for x in config]
    if isinstance(config, dict):
        return {k: as_dict(v) for k, v in config.items()}
    return config
