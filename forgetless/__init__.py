"""forgetless: compress transformer language models and report what the compression cost."""
from .models.io import load_model, save_model

__version__ = "0.1.0"
__all__ = ["load_model", "save_model", "__version__"]
