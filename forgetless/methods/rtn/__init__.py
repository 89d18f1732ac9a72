"""Round-to-nearest weight-only integer quantization (GPTQ's baseline): ``config.py`` and ``method.py``."""
