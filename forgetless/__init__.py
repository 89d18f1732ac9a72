"""forgetless: compress transformer language models and report what the compression cost.

The Python API (``api.py``): ``forgetless.apply(model, method_config_or_stack, calibration=...)``
applies methods to a model object and returns it; ``forgetless.apply_streamed(folder, ..., out_dir=)``
compresses a decoder-only LM's folder layer by layer into ``out_dir``; ``forgetless.compress(model=...,
data=..., method=...)`` returns a ``Run`` (``.model``, ``.tokenizer``, ``.card``: a ``Card``,
``.save(path)``) computed in memory; ``forgetless.evaluate(model, data, base=...)`` scores a model
(``Scores``), or compares it with its base example by example (``Comparison``); ``Task.from_datasets``
builds a task from 🤗 datasets; every method and objective config by its class name
(``forgetless.WandaConfig``, ``forgetless.RmcConfig``), ``METHODS`` / ``OBJECTIVES`` to list and build
them by name; ``load_model`` / ``save_model`` read and write forgetless model folders. Names are imported
on first use, so ``import forgetless`` (and ``forgetless --help``) does not import torch.
"""
import importlib

__version__ = "0.1.0"
EXPORTS = {"apply": ".api", "apply_streamed": ".api", "compress": ".api", "evaluate": ".api", "Run": ".pipeline",
           "Task": ".data.task", "Card": ".report.card_types", "Comparison": ".report.card_types",
           "Scores": ".report.card_types",
           "RunConfig": ".config", "TrainConfig": ".config", "EvalConfig": ".config", "SpeedConfig": ".config",
           "METHODS": ".registry", "OBJECTIVES": ".registry", "load_model": ".models.io",
           "save_model": ".models.io"}
__all__ = [*EXPORTS, "__version__"]


def __getattr__(name: str):
    if name in EXPORTS:
        return getattr(importlib.import_module(EXPORTS[name], __name__), name)
    if name.endswith("Config"):  # a method's or an objective's config (the registries import only configs)
        from .registry import METHODS, OBJECTIVES

        for registry in (METHODS, OBJECTIVES):
            found = registry.config_classes().get(name)
            if found is not None:
                return found
    raise AttributeError(f"module 'forgetless' has no attribute {name!r}")


def __dir__() -> list[str]:
    from .registry import METHODS, OBJECTIVES

    return sorted({*globals(), *__all__, *METHODS.config_classes(), *OBJECTIVES.config_classes()})
