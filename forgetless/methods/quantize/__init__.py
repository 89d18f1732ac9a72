"""Quantization: the ``quantize`` method (int8 per tensor or per token, bf16) and what ``rtn``, ``gptq``,
``awq`` and ``smoothquant`` share: the format options (``grid.py``), quantized formats (``formats.py``),
scale folding (``folding.py``) and per-unit sensitivity (the scheme presets: ``forgetless/schemes.py``)."""
