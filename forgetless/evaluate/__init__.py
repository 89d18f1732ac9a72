"""Evaluation: accuracy per set, F_bias, hard vs easy, parameters, speed.

This package shares its name with the API function ``forgetless.evaluate(model, data)``
(``api.evaluate``): once the package is imported, Python binds ``forgetless.evaluate`` to it, so
the package itself is callable and hands the call to the API function (imported on first call, so
importing the package stays free of the pipeline). Renaming the package would remove this.
"""
import importlib
import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, *args, **kwargs):
        """``forgetless.evaluate(model, data, ...)``: see ``forgetless.api.evaluate``."""
        return importlib.import_module("forgetless.api").evaluate(*args, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
