"""Name ⇄ config type ⇄ implementation tables for methods, objectives and tasks (peft's
``register_peft_method``, torchao's config → handler table).

A method or objective registers its config dataclass, in a module that imports no torch::

    @METHODS.register("magnitude", implementation=".method:MagnitudePruning")
    @dataclass
    class MagnitudeConfig(MethodConfig): ...

The tables fill lazily: a lookup by name imports that name's folder (``forgetless/methods/<name>/
config.py``); listing the names imports every folder's ``config.py`` and the modules named in
``$FORGETLESS_PLUGINS`` (comma-separated; a plugin may be a single file holding a config and its
implementation). A folder without ``__init__.py`` or ``config.py``, or whose ``config.py`` fails to
import, is an error naming it (folders named ``_*`` hold shared code, not entries). The
implementation (torch code) is imported only when a run builds it. Unknown names and unknown
config keys are errors that list what is available.
"""
from __future__ import annotations

import difflib
import importlib
import os
from pathlib import Path
from typing import Any, Callable

from .errors import ConfigError
from .options import build

PLUGINS_ENV = "FORGETLESS_PLUGINS"


class Registry:
    """A table of named entries: a config class with a lazily imported implementation, or (for
    tasks) an implementation alone."""

    def __init__(self, kind: str, package: str | None = None):
        self.kind = kind
        self.package = package
        self._configs: dict[str, type | None] = {}
        self._implementations: dict[str, Any] = {}
        self._loaded = package is None

    def register(self, name: str, implementation: str | None = None) -> Callable:
        """Decorator. With ``implementation`` (``"module:Class"``, ``".module:Class"`` relative to
        the config's package) it decorates the config class; without, the implementation itself."""

        def decorator(obj):
            if name in self._configs and self._configs[name] is not obj:
                raise ConfigError(f"{self.kind} {name!r} registered twice")
            if implementation is None:
                self._configs[name], self._implementations[name] = None, obj
            else:
                obj.name = name
                self._configs[name], self._implementations[name] = obj, (obj.__module__, implementation)
            return obj

        return decorator

    def _load(self) -> None:
        """Import every folder's ``config.py`` and the plugin modules (once)."""
        if self._loaded:
            return
        self._loaded = True
        for folder in self._folders():
            self._import_config(folder)
        for name in filter(None, (x.strip() for x in os.environ.get(PLUGINS_ENV, "").split(","))):
            try:
                importlib.import_module(name)
            except ImportError as exc:
                raise ConfigError(f"${PLUGINS_ENV}: cannot import plugin module {name!r} ({exc})") from None

    def _folders(self) -> list[Path]:
        """The package's entry folders (not ``_shared`` or other ``_`` / ``.`` names, not caches)."""
        root = Path(importlib.import_module(self.package).__file__).parent
        return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))

    def _import_config(self, folder: Path) -> None:
        """Import ``folder/config.py``: a folder that is not a package, has no ``config.py`` or whose
        ``config.py`` fails to import is one error naming it (a method is never silently absent)."""
        where = f"{self.kind} folder {self.package.replace('.', '/')}/{folder.name}"
        if not (folder / "__init__.py").is_file():
            raise ConfigError(f"{where}: has no __init__.py; every {self.kind} folder is a package (add an "
                              "empty __init__.py, or rename it with a leading _ if it is not one)")
        if not (folder / "config.py").is_file():
            raise ConfigError(f"{where}: has no config.py; every {self.kind} folder registers its config there")
        module = f"{self.package}.{folder.name}.config"
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure of a config module is one error naming it
            raise ConfigError(f"{where}/config.py cannot be imported: {type(exc).__name__}: {exc}") from exc

    def _find(self, name: str) -> None:
        """Register ``name`` by importing only its own folder's config (``block-influence`` →
        ``block_influence/``), so building one config does not import every other; else everything."""
        folder = str(name).replace("-", "_")
        if self.package and not self._loaded and folder.isidentifier() and not folder.startswith("_"):
            path = Path(importlib.import_module(self.package).__file__).parent / folder
            if path.is_dir():
                self._import_config(path)
        if name not in self._configs:
            self._load()

    def names(self) -> list[str]:
        self._load()
        return sorted(self._configs)

    def _check(self, name: str) -> None:
        if name not in self._configs:
            self._find(name)
        if name not in self._configs:
            hint = difflib.get_close_matches(str(name), self.names(), n=1)
            extra = f" Did you mean {hint[0]!r}?" if hint else ""
            raise ConfigError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names())}.{extra}")

    def config_class(self, name: str) -> type | None:
        self._check(name)
        return self._configs[name]

    def option_names(self, name: str) -> set[str]:
        """The options of entry ``name``: its config's field names (none for an entry without a config)."""
        import dataclasses

        cls = self.config_class(name)
        return {f.name for f in dataclasses.fields(cls)} if cls is not None else set()

    def config_classes(self) -> dict[str, type]:
        """Every config class by its class name (``{"WandaConfig": WandaConfig, ...}``; a method without options:
        none): what ``forgetless.<ClassName>`` finds."""
        self._load()
        return {cls.__name__: cls for cls in self._configs.values() if cls is not None}

    def get(self, name: str):
        """The implementation of ``name`` (imported on first use)."""
        self._check(name)
        entry = self._implementations[name]
        if isinstance(entry, tuple):
            owner, target = entry
            module, _, attribute = target.partition(":")
            if module.startswith("."):
                module = owner.rsplit(".", 1)[0] + module if module != "." else owner
            entry = self._implementations[name] = getattr(importlib.import_module(module), attribute)
        return entry

    def make_config(self, name: str, options: dict | None = None):
        """The config of ``name`` built from ``options`` (text or typed values); unknown keys are errors."""
        cls = self.config_class(name)
        options = {k: v for k, v in (options or {}).items() if v is not None}
        if cls is None:
            if options:
                raise ConfigError(f"{self.kind} {name!r} takes no options, got: {', '.join(sorted(options))}")
            return None
        return build(cls, options, f"{self.kind} {name!r}")

    def config(self, value):
        """A config instance from a name or a config (``"heads"`` or ``HeadsConfig(ratio=0.5)``)."""
        if isinstance(value, str):
            return self.make_config(value)
        name = getattr(type(value), "name", None)
        if name is None or self._configs.get(name) is not type(value):
            self._load()
            raise ConfigError(f"{self.kind}: expected a name or a config of {', '.join(self.names())}; got "
                              f"{type(value).__name__}")
        return value

    def build(self, config):
        """The implementation instance for a config (``METHODS.build(MagnitudeConfig())``)."""
        config = self.config(config)
        return self.get(config.name)(config)


METHODS = Registry("compression method", "forgetless.methods")
OBJECTIVES = Registry("objective", "forgetless.objectives")
