"""Compression methods, registered by name. Every module in this package is imported so a new
method only has to be a new file that uses ``@METHODS.register``."""
import importlib
import pkgutil

from .base import METHODS, CompressionContext, CompressionMethod

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "base":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["METHODS", "CompressionContext", "CompressionMethod"]
