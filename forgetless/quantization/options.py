"""The options of a quantized linear layer, shared by ``gptq``, ``rtn`` and ``awq`` (``WeightFormat``): the
flags a format object (``format.QuantFormat``, ``WeightFormat.format``) is made of — the weights' codes
(``--weight-type``: a key of ``registry.CODES``) and ``bits``, which weights share one scale (``group_size``),
the grid's symmetry and whether the layer's *inputs* are quantized too (W8A8: ``activations``) — and the
bit budget's (``candidates.py``). Standard library only (read by the registry without torch).

A group size must divide every quantized layer's input width: the saved format (compressed-tensors,
as transformers and vLLM load it) has no partial last group, and llm-compressor refuses the same
(SmolLM2's 576 = 4 · 128 + 64).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import OptionError
from ..options import Config, option
from .candidates import check_budget
from .format import ACTIVATIONS, WEIGHT_TYPES, QuantFormat

BITS = (2, 3, 4, 8)  # ints.GROUPED_BITS (that module imports torch)
VLLM_GROUPS = (32, 64, 128)  # the group sizes vLLM's int4 / int8 GPU kernels take (and -1)
GROUP_SIZE_HELP = ("input columns sharing one scale (and zero point) per output row; must divide every quantized "
                   "layer's input width (vLLM's GPU kernels take 32, 64 or 128); -1: one scale per output row; 0: one "
                   "for the whole matrix (fp8 only)")
ASYMMETRIC_HELP = ("a zero point per group (min-max grid); default symmetric, centred on 0 (zero point 2^(bits−1)): "
                   "symmetric folders load in plain transformers, asymmetric ones need "
                   "CompressedTensorsConfig(dequantize=True) with transformers 5.24 + compressed-tensors 0.20 (a "
                   "mixture-of-experts model's experts: forgetless.load_model only)")
ACTIVATIONS_HELP = ("quantize every quantized layer's inputs too: none (weight-only) | int8-token (int8, one scale per "
                    "token computed at run time: W8A8-INT8; needs --bits 8, symmetric) | fp8-token (float8_e4m3fn per "
                    "token: FP8-DYNAMIC) | fp8-tensor (float8, one scale per layer fixed from the calibration inputs: "
                    "FP8; methods that calibrate). fp8 inputs need --weight-type fp8. On CPU the quantize-dequantize "
                    "runs in float32: the numbers of a W8A8 kernel, no speedup")


@dataclass
class WeightFormat(Config):
    """How a linear layer is stored and run: weights, scale groups, symmetry, inputs."""

    bits: int = option(4, choices=BITS, help="bits per weight code (2 | 3 | 4 | 8; --weight-type fp8: 8)")
    group_size: int = option(128, low=-1, help=GROUP_SIZE_HELP)
    asymmetric: bool = option(False, switch=True, help=ASYMMETRIC_HELP)
    weight_type: str = option("int", choices=WEIGHT_TYPES, help=(
        "int: integer codes (round-to-nearest min-max grid) | fp8: float8_e4m3fn codes with one float32 scale per "
        "output row (--group-size -1) or per matrix (0), compressed-tensors float-quantized"))
    activations: str = option("none", choices=ACTIVATIONS, help=ACTIVATIONS_HELP)
    sensitivity: str = option("none", choices=("none", "blocks", "linear-types", "linears"), help=(
        "after quantizing, put each decoder block (blocks), each kind of linear layer (linear-types: q_proj, …, "
        "down_proj, the experts' projections of every block) or each linear layer (linears) quantized alone into the "
        "base model and rank them by their KL divergence to the base on 8 calibration texts (and the predictions "
        "they flip); the card shows the ranking, its cost and an --ignore option for a mixed-precision run. With "
        "--bits-budget: the units the budget assigns formats to (default blocks), measured before quantizing at "
        "each format (the card's budget section) instead"))
    bits_budget: float = option(0.0, low=0, help=(
        "average bits per quantized weight as the folder stores them (codes, scales, zero points; a kept layer "
        "float32, 32 bits): each unit (--sensitivity: blocks by default, linear-types, linears) takes one of "
        "--budget-formats, chosen from its measured KL at each (round-to-nearest, 8 calibration texts) to minimise "
        "the summed KL within the budget (exact); then the method quantizes each unit in its format. 0: off"))
    budget_formats: list[str] = option(factory=list, help=(
        "the formats --bits-budget chooses among, of the run's scheme family: W<bits>A16-g<group>, W<bits>A16 (one "
        "scale per row), kept (default W4A16-g128,W4A16-g64,W8A16,kept); --activations int8-token: W8A8,kept; "
        "--weight-type fp8: FP8,kept"))
    no_uniform_check: bool = option(False, switch=True, help=(
        "with --bits-budget: skip the uniform check (by default the base is also quantized in the smallest single "
        "format of the mix's size or larger, evaluated on the same items and paired with the mix: difference, "
        "interval, flips, KL and a verdict on the card)"))

    @property
    def format(self) -> QuantFormat:
        """The format these options describe (a bit budget's units each take their own: ``_shared/budget.py``)."""
        return QuantFormat.of(self)

    def check_format(self, calibrates: bool) -> None:
        """The options fit together (one ``OptionError`` naming the flag); ``calibrates``: the method sees
        calibration inputs (static input scales need them)."""
        self.format.check(calibrates, getattr(self, "name", "this method"))
        check_budget(self)

    def check_widths(self, dims: dict, where: str) -> None:
        """The group size against the config's linear widths (``dims["widths"]``), for the default selection
        of every linear; another ``targets`` / ``ignore`` is checked on the chosen modules (``check_width``)."""
        if not getattr(self, "every_linear", True) or self.bits_budget:
            return  # a budget offers each unit the formats whose groups fit it (``methods/_shared/budget.py``)
        check_groups_fit(self.group_size, [(f"{where} has linear layers with", width)
                                           for width in sorted(set(dims.get("widths") or ()))])


def check_groups_fit(group_size: int, layers: list[tuple[str, int]]) -> None:
    """``group_size`` divides the input width of every quantized layer (``[(where, width)]``: where reads
    "<module> has" or "<model> has linear layers with"); otherwise ONE line naming the flag, the narrowest
    layer that does not fit and the group sizes that fit every layer at once (the experts of a
    mixture-of-experts included), so the next run is not refused on another layer."""
    failing = [(where, width) for where, width in layers if group_size not in (-1, 0) and width % group_size]
    if not failing:
        return
    where, width = min(failing, key=lambda layer: layer[1])
    common = math.gcd(*(w for _, w in layers))
    fits = [g for g in reversed(VLLM_GROUPS) if g < group_size and common % g == 0] or \
        [g for g in range(min(group_size, common + 1) - 1, 0, -1) if common % g == 0][:1]
    every = f" ({fits[0]} fits every quantized layer)" if len(layers) > 1 else ""
    if group_size > width:
        raise OptionError(f"--group-size {group_size}: {where} {width} inputs, fewer than one group; use at most "
                          f"{fits[0]}, or -1 for one group per output row{every}")
    raise OptionError(f"--group-size {group_size}: {where} {width} inputs, not a multiple of {group_size} (the saved "
                      f"compressed-tensors format has no partial last group); use {' or '.join(map(str, fits))}, "
                      f"or -1 for one group per output row{every}")
