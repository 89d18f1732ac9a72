"""Method and objective names and config dataclasses for the parser, without importing torch,
transformers or nltk: ``--help`` stays fast.

The parser only needs, for every ``@METHODS.register(name, Config)`` / ``@OBJECTIVES.register``,
the name and the config dataclass (fields, types, defaults). This module reads them from the
package sources with ``ast``: it finds the ``register`` decorators and rebuilds each config class
from its own source (``exec`` of the class statement alone, with its base classes and the module
constants it uses resolved the same way through the module's ``from … import`` lines). The real
registries are imported only when a command runs. Anything it cannot rebuild (a default computed
by a call into torch, say) makes it fall back to importing the real registry, so the result is
always right, only sometimes slower; ``tests/test_cli_startup.py`` checks it matches the real one.
"""
from __future__ import annotations

import ast
import builtins
import dataclasses
import importlib
import sys
import types
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent  # forgetless/
_SAFE = {"dataclass": dataclasses.dataclass, "field": dataclasses.field, "annotations": None}


class _Unresolved(Exception):
    pass


@lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _module_path(current: Path, module: str | None, level: int) -> Path | None:
    if level == 0:
        if not (module or "").startswith("forgetless"):
            return None
        base, parts = PACKAGE.parent, module.split(".")
    else:
        base, parts = current.parent, (module or "").split(".") if module else []
        for _ in range(level - 1):
            base = base.parent
    target = base.joinpath(*parts)
    if target.with_suffix(".py").is_file():
        return target.with_suffix(".py")
    if (target / "__init__.py").is_file():
        return target / "__init__.py"
    return None


class _Builder:
    """Rebuild module-level names (config classes, literal constants) of package files."""

    def __init__(self):
        self.cache: dict[tuple[Path, str], object] = {}

    def resolve(self, path: Path, name: str, depth: int = 0):
        key = (path, name)
        if key in self.cache:
            return self.cache[key]
        if depth > 20:
            raise _Unresolved(name)
        tree = _tree(path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                value = self._build_class(path, node, depth)
                break
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                try:
                    value = ast.literal_eval(node.value)
                except ValueError as exc:
                    raise _Unresolved(name) from exc
                break
            if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
                alias = next(a for a in node.names if (a.asname or a.name) == name)
                if node.module in ("dataclasses", "__future__") and alias.name in _SAFE:
                    value = _SAFE[alias.name]
                    break
                source = _module_path(path, node.module, node.level)
                if source is None:
                    raise _Unresolved(name)
                value = self.resolve(source, alias.name, depth + 1)
                break
        else:
            if name in _SAFE:
                value = _SAFE[name]
            else:
                raise _Unresolved(name)
        self.cache[key] = value
        return value

    def _build_class(self, path: Path, node: ast.ClassDef, depth: int) -> type:
        module_name = f"forgetless.cli._catalogue.{path.parent.name}.{path.stem}"
        module = sys.modules.setdefault(module_name, types.ModuleType(module_name))  # dataclasses look it up
        namespace = module.__dict__
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for decorator in node.decorator_list:
            used |= {n.id for n in ast.walk(decorator) if isinstance(n, ast.Name)}
        source = ast.Module(body=[node], type_ignores=[])
        code = compile(source, str(path), "exec", flags=annotations_flag(), dont_inherit=True)
        for name in sorted(used):
            if hasattr(builtins, name):
                continue
            try:
                namespace[name] = self.resolve(path, name, depth + 1)
            except _Unresolved:
                pass  # used only inside methods (validation): not needed to build the class
        try:
            exec(code, namespace)  # noqa: S102 - our own package source, one class statement
        except Exception as exc:  # a name needed at class creation could not be rebuilt
            raise _Unresolved(node.name) from exc
        cls = namespace[node.name]
        if not dataclasses.is_dataclass(cls):
            raise _Unresolved(node.name)
        return cls


def annotations_flag() -> int:
    import __future__

    return __future__.annotations.compiler_flag


class LightRegistry:
    """The part of ``registry.Registry`` the parser uses: ``names()`` and ``config_class(name)``."""

    def __init__(self, kind: str, configs: dict[str, type | None]):
        self.kind = kind
        self._configs = configs

    def names(self) -> list[str]:
        return sorted(self._configs)

    def config_class(self, name: str) -> type | None:
        return self._configs[name]


def _scan(package: str, registry: str) -> dict[str, type | None]:
    builder = _Builder()
    configs: dict[str, type | None] = {}
    for path in sorted((PACKAGE / package).glob("*.py")):
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ClassDef):
                continue
            for decorator in node.decorator_list:
                if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
                        and decorator.func.attr == "register" and isinstance(decorator.func.value, ast.Name)
                        and decorator.func.value.id == registry):
                    continue
                args = decorator.args
                if not args or not isinstance(args[0], ast.Constant) or len(args) > 2 or decorator.keywords:
                    raise _Unresolved(f"{path.name}: register call")
                if len(args) == 1:
                    configs[args[0].value] = None
                elif isinstance(args[1], ast.Name):
                    configs[args[0].value] = builder.resolve(path, args[1].id)
                else:
                    raise _Unresolved(f"{path.name}: register call")
    return configs


@lru_cache(maxsize=None)  # the parser is built on every start: scan the sources once per process
def light_registry(package: str, registry: str):
    """``(registry-like, light)``: the scanned catalogue, or the real registry when the sources
    cannot be read that way (``light`` False)."""
    try:
        configs = _scan(package, registry)
        if configs:
            return LightRegistry(registry.lower(), configs), True
    except (_Unresolved, SyntaxError, OSError):
        pass
    return getattr(importlib.import_module("forgetless.registry"), registry), False


def methods():
    return light_registry("methods", "METHODS")[0]


def objectives():
    return light_registry("objectives", "OBJECTIVES")[0]
