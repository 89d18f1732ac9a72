"""Training objectives, registered by name; every module in this package is imported."""
import importlib
import pkgutil

from .base import OBJECTIVES, Objective

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["OBJECTIVES", "Objective"]
