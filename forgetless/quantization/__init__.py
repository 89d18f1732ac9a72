"""Quantization as a library: the format object (``format.QuantFormat``: bits, codes type, group / channel /
tensor scales, symmetry, quantized inputs) and everything that takes it — the weights' codes, one file per
type (``ints.py``, ``fp8.py``; ``registry.py`` names them), the inputs' quantization (``inputs.py``), a layer
carrying its codes (``layers.py``), compressed-tensors' writer and reader (``compressed_tensors.py``), the
options a method's config is made of (``options.py``) and a bit budget's formats (``candidates.py``). The
methods (``rtn``, ``gptq``, ``awq``, ``smoothquant``, ``quantize``) are its users; it imports no method and
no model adapter."""
