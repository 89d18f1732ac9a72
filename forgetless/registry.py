"""Name → (config dataclass, implementation) tables for methods, objectives and tasks.

Unknown names and unknown config keys are errors that list what is available
(the practice of peft's ``register_peft_method`` / torchao's config → handler table).
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Callable, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A table of named entries, each with an optional config dataclass."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._configs: dict[str, type | None] = {}

    def register(self, name: str, config_cls: type | None = None) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} registered twice")
            self._entries[name] = obj
            self._configs[name] = config_cls
            return obj

        return decorator

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> T:
        if name not in self._entries:
            hint = difflib.get_close_matches(name, self.names(), n=1)
            extra = f" Did you mean {hint[0]!r}?" if hint else ""
            raise ConfigError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}.{extra}")
        return self._entries[name]

    def config_class(self, name: str) -> type | None:
        self.get(name)
        return self._configs[name]

    def make_config(self, name: str, options: dict[str, Any] | None = None) -> Any:
        """Build the config dataclass of ``name`` from ``options``; unknown keys are an error."""
        cls = self.config_class(name)
        options = {k: v for k, v in (options or {}).items() if v is not None}
        if cls is None:
            if options:
                raise ConfigError(f"{self.kind} {name!r} takes no options, got: {', '.join(sorted(options))}")
            return None
        return build_dataclass(cls, options, f"{self.kind} {name!r}")


def build_dataclass(cls: type, options: dict[str, Any], what: str) -> Any:
    """Instantiate dataclass ``cls`` from a dict, rejecting unknown keys with a helpful message."""
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ConfigError(f"unknown option(s) for {what}: {', '.join(unknown)}; it accepts: {', '.join(sorted(fields))}")
    try:
        return cls(**options)
    except ConfigError as exc:  # "prune_every must be >= 1" → "--prune-every 0: prune_every must be >= 1"
        field = next((f for f in sorted(options, key=len, reverse=True) if str(exc).startswith(f + " ")), None)
        if field is None:
            raise
        flag = "--" + ("objective-" if what.startswith("objective") else "") + field.replace("_", "-")
        raise type(exc)(f"{flag} {options[field]}: {exc}") from None
