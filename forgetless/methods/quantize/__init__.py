"""Post-training quantization (int8 dynamic, bf16): ``config.py`` and ``method.py``."""
