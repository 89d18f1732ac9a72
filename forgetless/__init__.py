"""forgetless: compress transformer language models and report what the compression cost."""
__version__ = "0.1.0"
__all__ = ["load_model", "save_model", "__version__"]


def __getattr__(name: str):
    """``forgetless.load_model`` / ``save_model`` import torch on first use, not with the package
    (so ``forgetless --help`` starts fast)."""
    if name in ("load_model", "save_model"):
        from .models import io

        return getattr(io, name)
    raise AttributeError(f"module 'forgetless' has no attribute {name!r}")
