"""Options of a weight-only integer grid, shared by ``gptq`` and ``rtn``: bits per code and the
group of input columns sharing one scale and zero point. Standard library only (read by the
registry without torch); the grid itself is in ``gptq/solver.py``, its storage in
``models/compressed_tensors.py``.

A group size must divide every quantized layer's input width: the saved format (compressed-tensors,
as transformers and vLLM load it) has no partial last group, and llm-compressor refuses the same
(SmolLM2's 576 = 4 · 128 + 64).
"""
from __future__ import annotations

from ...errors import OptionError

BITS = (2, 3, 4, 8)  # models.compressed_tensors.GROUPED_BITS (that module imports torch)
VLLM_GROUPS = (32, 64, 128)  # the group sizes vLLM's int4 / int8 GPU kernels take (and -1)
GROUP_SIZE_HELP = ("input columns sharing one scale and zero point per output row; must divide every quantized "
                   "layer's input width (vLLM's GPU kernels take 32, 64 or 128); -1: one group per output row")
ASYMMETRIC_HELP = ("a zero point per group (min-max grid); default symmetric, centred on 0 (zero point 2^(bits−1)): "
                   "symmetric folders load in plain transformers, asymmetric ones need "
                   "CompressedTensorsConfig(dequantize=True) with transformers 5.24 + compressed-tensors 0.20")


def check_group_size(group_size: int) -> None:
    if group_size == 0 or group_size < -1:
        raise OptionError(f"--group-size {group_size}: give a positive number of input columns, or -1 for one group "
                          "per output row")


def check_group_fits(group_size: int, width: int, where: str) -> None:
    """``group_size`` divides a layer's ``width`` inputs (one line naming the flag and what fits)."""
    if group_size == -1 or width % group_size == 0:
        return
    if group_size > width:
        raise OptionError(f"--group-size {group_size}: {where} {width} inputs, fewer than one group; use at most "
                          f"{width}, or -1 for one group per output row")
    fits = [g for g in reversed(VLLM_GROUPS) if g < group_size and width % g == 0] or \
        [g for g in range(group_size - 1, 0, -1) if width % g == 0][:1]
    raise OptionError(f"--group-size {group_size}: {where} {width} inputs, not a multiple of {group_size} (the saved "
                      f"compressed-tensors format has no partial last group); use {' or '.join(map(str, fits))}, "
                      "or -1 for one group per output row")
