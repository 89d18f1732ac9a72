"""Quantization: the ``quantize`` method (int8 per tensor or per token, bf16) and what ``rtn``, ``gptq``,
``awq`` and ``smoothquant`` share: the format options (``grid.py``), quantized formats (``formats.py``),
scale folding (``folding.py``), the scheme presets (``schemes.py``) and per-unit sensitivity."""
