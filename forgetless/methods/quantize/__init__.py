"""The ``quantize`` method (int8 per tensor or per token, bf16): a user of the quantization library
(``forgetless/quantization``), as ``rtn``, ``gptq``, ``awq`` and ``smoothquant`` are."""
