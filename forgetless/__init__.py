"""forgetless: compress transformer language models and report what the compression cost.

The Python API (``api.py``): ``forgetless.apply(model, method_config_or_stack, calibration=...)``
applies methods to a model and returns it; ``forgetless.compress(model=..., data=..., method=...)``
returns a ``Run`` (``.model``, ``.tokenizer``, ``.card``, ``.save(path)``) computed in memory;
``forgetless.evaluate(model, data, base=...)`` scores a model, or compares it with its base example
by example; ``Task.from_datasets`` builds a task from 🤗 datasets; ``METHODS`` /
``OBJECTIVES`` list and build method / objective configs; ``load_model`` / ``save_model`` read and
write forgetless model folders. Names are imported on first use, so ``import forgetless`` (and
``forgetless --help``) does not import torch.
"""
import importlib

__version__ = "0.1.0"
EXPORTS = {"apply": ".api", "compress": ".api", "evaluate": ".api", "Run": ".pipeline", "Task": ".data.task", "Card": ".report.card_types",
           "RunConfig": ".config", "TrainConfig": ".config", "EvalConfig": ".config", "SpeedConfig": ".config",
           "METHODS": ".registry", "OBJECTIVES": ".registry", "load_model": ".models.io",
           "save_model": ".models.io"}
__all__ = [*EXPORTS, "__version__"]


def __getattr__(name: str):
    if name in EXPORTS:
        return getattr(importlib.import_module(EXPORTS[name], __name__), name)
    raise AttributeError(f"module 'forgetless' has no attribute {name!r}")
