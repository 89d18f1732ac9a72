"""Integer weight codes (``--weight-type int``, registered as ``int``): the grid, GPTQ's rounding rule on
it, and the tensors a quantized Linear stores in compressed-tensors' ``pack-quantized`` (weight-only:
W4A16, W8A16, AWQ) and ``int-quantized`` (int8 weights with int8 inputs: W8A8) formats.

**The grid** (GPTQ, Frantar et al. 2022, §4 "grouping"), per output row and per group of ``group_size``
consecutive input columns (``-1``: one group per row; where ``group_size`` does not divide the width the
last group is smaller, as in the authors' code), is the min-max affine grid with ``2^b`` levels, the
range always including 0:

* asymmetric: ``S = (max − min) / (2^b − 1)``, ``Z = round(−min / S)``;
* symmetric: ``S = 2·max|w| / (2^b − 1)``, ``Z = 2^(b−1)``;

``q = clamp(round(w / S) + Z, 0, 2^b − 1)``, ``ŵ = S · (q − Z)``; scales rounded to float32 when chosen.
GPTQ's column rule on this grid (``_GridRule``; its two grid rules and the zeros it keeps:
``methods/gptq/solver.py``).

In memory a quantized Linear keeps dense float32 weights ``w = S · (q − Z)`` and its codes
(``GroupedInts``), so it runs on any CPU, no faster than float32.

On disk (read from compressed-tensors 0.19 / 0.20 and an llm-compressor 0.14 output, described in
``tests/fixtures/llmcompressor_w4.json``), ``pack-quantized``: each quantized Linear ``M`` stores,
instead of ``M.weight``:

* ``M.weight_packed`` (int32, out × ⌈in · b / 32⌉): each row's codes as one dense little-endian bit
  stream, code ``j`` at bits ``j·b … j·b + b − 1`` (word ``k`` holds stream bits ``32k … 32k + 31``;
  3-bit codes straddle words). compressed-tensors reads a stored value ``v`` as the signed code
  ``v − 2^(b−1)``; forgetless's unsigned ``q`` is exactly that ``v``;
* ``M.weight_scale`` (float32, out × groups) and ``M.weight_shape`` (int64, [out, in]);
* asymmetric only: ``M.weight_zero_point`` (int32, ⌈out · b / 32⌉ × groups): the zero points packed
  the same way along the output dimension (compressed-tensors' signed ``Z − 2^(b−1)``). A symmetric
  grid has ``Z = 2^(b−1)`` (signed zero point 0) and stores none.

``int-quantized``: ``M.weight`` as ``I8`` (the signed code ``q − 128``) and ``M.weight_scale`` (float32,
out × groups; a symmetric grid stores no zero point).

compressed-tensors dequantizes ``(q − Z) · S`` in float32, which is bit for bit forgetless's
float32 weight (``q − Z`` is a small integer, so both round the same exact product once). Its
group strategy needs ``group_size`` to divide every quantized width (no partial last group):
``options.check_groups_fit`` refuses the rest before any work.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..errors import ForgetlessError
from .format import PACKED, QuantFormat, check_group_size

GROUPED_BITS = (2, 3, 4, 8)
INT_QUANTIZED = "int-quantized"  # compressed-tensors' format of int8 codes with int8 inputs (PACKED: weight-only)


# ----- the grid -----------------------------------------------------------------------------------------
def group_grid(values: torch.Tensor, bits: int, symmetric: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale and zero point (float64) of each row of ``values`` (out × k): the grid above."""
    levels = 2 ** bits - 1
    values = values.to(torch.float64)
    low = values.min(dim=1).values.clamp(max=0)
    high = values.max(dim=1).values.clamp(min=0)
    if symmetric:
        high = torch.maximum(low.abs(), high)
        low = -high
    flat = high == low  # an all-zero group: any grid represents it exactly
    low, high = torch.where(flat, -torch.ones_like(low), low), torch.where(flat, torch.ones_like(high), high)
    scale = ((high - low) / levels).to(torch.float32).to(torch.float64)
    zero = torch.full_like(scale, float((levels + 1) // 2)) if symmetric else torch.round(-low / scale).clamp(0, levels)
    return scale, zero


def round_codes(values: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bits: int) -> torch.Tensor:
    """``clamp(round(w / S) + Z, 0, 2^b − 1)`` (``scale``, ``zero`` broadcast against ``values``)."""
    return torch.clamp(torch.round(values / scale) + zero, 0, 2 ** bits - 1)


def round_to_nearest(weight: torch.Tensor, bits: int = 4, group_size: int = 128, symmetric: bool = False) -> GroupedInts:
    """Every group's grid from its weights, each weight rounded alone (the baseline GPTQ improves on)."""
    w = weight.detach().to(torch.float64)
    cols = w.shape[1]
    size = cols if group_size == -1 else min(group_size, cols)
    scales, zeros, codes = [], [], []
    for start in range(0, cols, size):
        scale, zero = group_grid(w[:, start:start + size], bits, symmetric)
        codes.append(round_codes(w[:, start:start + size], scale.unsqueeze(1), zero.unsqueeze(1), bits))
        scales.append(scale)
        zeros.append(zero)
    return GroupedInts(bits, size, torch.cat(codes, dim=1).to(torch.uint8), torch.stack(scales, 1).float(),
                       torch.stack(zeros, 1).to(torch.uint8))


# ----- the codes ----------------------------------------------------------------------------------------
@dataclass
class GroupedInts:
    """One Linear's weight as ``bits``-bit codes (``out × in``, uint8) with a float32 scale and an
    integer zero point per row and group of ``group_size`` input columns (``out × groups``).
    ``actorder``: compressed-tensors' name for how the columns were ordered while quantizing
    (``"weight"``: GPTQ's act-order with fixed, contiguous groups; None: natural order). ``strategy``:
    compressed-tensors' ``"channel"`` (asked for one group per row) or ``"group"`` (groups of
    ``group_size``, even where one group spans the row); None: channel where one group spans the row."""

    bits: int
    group_size: int
    codes: torch.Tensor
    scales: torch.Tensor
    zeros: torch.Tensor
    actorder: str | None = None
    strategy: str | None = None

    CT_TYPE = "int"  # compressed-tensors' ``type`` of these weights
    FORMATS = (PACKED, INT_QUANTIZED)
    GRIDS_IN_SWEEP = True  # GPTQ may take a group's grid when its sweep reaches it (static_groups: before)

    # --- what the format asks of integer codes
    @staticmethod
    def check(fmt: QuantFormat) -> None:
        """Integer codes take 2, 3, 4 or 8 bits (the option's choices), groups or one scale per row."""
        check_group_size(fmt.group_size)

    @staticmethod
    def takes_inputs(fmt: QuantFormat) -> bool:
        """Quantized inputs: int8 per token with symmetric 8-bit weights (compressed-tensors' int-quantized)."""
        return fmt.activations == "int8-token" and fmt.bits == 8 and fmt.symmetric

    @staticmethod
    def label(fmt: QuantFormat) -> str:
        return f"int{fmt.bits}"

    @staticmethod
    def describe(fmt: QuantFormat) -> str:
        groups = "one scale per output row" if fmt.group_size == -1 else f"groups of {fmt.group_size}"
        return f"int{fmt.bits} weights, {groups}, {'symmetric' if fmt.symmetric else 'asymmetric'}"

    @staticmethod
    def ct_format(fmt: QuantFormat) -> str:
        return PACKED if fmt.weight_only else INT_QUANTIZED

    @classmethod
    def rounded(cls, weight: torch.Tensor, fmt: QuantFormat) -> GroupedInts:
        """``weight`` rounded to nearest on the format's grid."""
        return round_to_nearest(weight, fmt.bits, fmt.group_size, fmt.symmetric)

    @classmethod
    def gptq_rule(cls, weights: list[torch.Tensor], weight_t: torch.Tensor, perm: torch.Tensor, fmt: QuantFormat,
                  static: bool) -> _GridRule:
        """GPTQ's column rule on this grid (``weights``: the linears swept together, as given; ``weight_t``: their
        prepared rows, permuted and transposed, ``in × out``; ``static``: every grid from the original weights)."""
        return _GridRule(weight_t, perm, fmt, static)

    # --- one layer's codes
    def dequantize(self) -> torch.Tensor:
        """``S · (q − Z)`` as float32 (computed in float64, so in memory and after loading alike)."""
        group = torch.arange(self.codes.shape[1], device=self.codes.device) // self.group_size
        scales, zeros = self.scales.to(torch.float64)[:, group], self.zeros.to(torch.float64)[:, group]
        return (scales * (self.codes.to(torch.float64) - zeros)).to(torch.float32)

    @property
    def symmetric(self) -> bool:
        """Every zero point at the grid's middle ``2^(b−1)`` (stored without zero points)."""
        return bool((self.zeros.to(torch.int64) == 2 ** (self.bits - 1)).all())

    def ct_form(self, inputs: bool) -> str:
        """The compressed-tensors format this layer is stored in (``inputs``: its inputs are quantized)."""
        if not inputs:
            return PACKED
        if self.bits == 8 and self.symmetric:
            return INT_QUANTIZED
        raise ForgetlessError(f"quantized inputs need symmetric 8-bit integer weights (compressed-tensors "
                              f"int-quantized); got {self.bits}-bit, symmetric={self.symmetric}")

    def weights_args(self) -> dict:
        """compressed-tensors' ``QuantizationArgs`` of this weight, keys as llm-compressor writes them."""
        channel = self.strategy == "channel" if self.strategy else \
            self.scales.shape[1] == 1 and self.group_size >= self.codes.shape[1]
        return {"actorder": self.actorder, "block_structure": None, "dynamic": False,
                "group_size": None if channel else self.group_size, "num_bits": self.bits,
                "observer": "memoryless_minmax", "observer_kwargs": {}, "scale_dtype": None,
                "strategy": "channel" if channel else "group", "symmetric": self.symmetric, "type": "int",
                "zp_dtype": None if self.symmetric else "torch.int8"}

    def stored(self, name: str, form: str = PACKED) -> dict[str, torch.Tensor]:
        """The module's tensors in the checkpoint (names above)."""
        if form == INT_QUANTIZED:
            signed = (self.codes.to(torch.int16) - 128).to(torch.int8)
            return {f"{name}.weight": signed.contiguous(), f"{name}.weight_scale": self.scales.float().contiguous()}
        tensors = {f"{name}.weight_packed": pack_int32(self.codes, self.bits),
                   f"{name}.weight_scale": self.scales.to(torch.float32).contiguous(),
                   f"{name}.weight_shape": torch.tensor(list(self.codes.shape), dtype=torch.int64)}
        if not self.symmetric:
            tensors[f"{name}.weight_zero_point"] = pack_int32(self.zeros.T, self.bits).T.contiguous()
        return tensors

    @staticmethod
    def reads(form: str, weights: dict) -> bool:
        """Whether a config group of ``form`` with these ``weights`` args holds codes of this class."""
        return weights.get("type") == "int" and weights.get("strategy") in ("group", "channel") and \
            int(weights.get("num_bits", 0)) in (GROUPED_BITS if form == PACKED else (8,))

    @staticmethod
    def layout(name: str, form: str, weights: dict, rows: int, columns: int, scale: tuple) -> dict[str, tuple]:
        """``{tensor name: (shape, safetensors dtype)}`` of the weight's tensors (``scale``: the scale's entry)."""
        bits, groups = int(weights["num_bits"]), scale[0][-1]
        if form == INT_QUANTIZED:
            return {f"{name}.weight": ((rows, columns), "I8"), f"{name}.weight_scale": scale}
        layout = {f"{name}.weight_packed": ((rows, -(-columns * bits // 32)), "I32"), f"{name}.weight_scale": scale,
                  f"{name}.weight_shape": ((2,), "I64")}
        if not weights.get("symmetric", True):
            layout[f"{name}.weight_zero_point"] = ((-(-rows * bits // 32), groups), "I32")
        return layout

    @classmethod
    def from_stored(cls, tensors: dict, name: str, args: dict, form: str = PACKED) -> GroupedInts:
        """Inverse of ``stored`` (pops the module's tensors from ``tensors``); ``args``: its scheme's weights."""
        if form == INT_QUANTIZED:
            signed, scales = tensors.pop(f"{name}.weight", None), tensors.pop(f"{name}.weight_scale", None)
            if signed is None or scales is None or signed.dtype != torch.int8:
                raise ForgetlessError(f"quantized module {name} has no int8 weight and weight_scale")
            size = signed.shape[1] if args.get("strategy") == "channel" else int(args["group_size"])
            return cls(8, size, (signed.to(torch.int16) + 128).to(torch.uint8), scales.float(),
                       torch.full(scales.shape, 128, dtype=torch.uint8), args.get("actorder"), args.get("strategy"))
        bits = int(args["num_bits"])
        try:
            packed, scales = tensors.pop(f"{name}.weight_packed"), tensors.pop(f"{name}.weight_scale")
            rows, columns = (int(v) for v in tensors.pop(f"{name}.weight_shape").tolist())
        except KeyError as exc:
            raise ForgetlessError(f"quantized module {name} has no {exc.args[0]}") from exc
        group_size = columns if args.get("strategy") == "channel" else int(args["group_size"])
        if scales.shape != (rows, -(-columns // group_size)):
            raise ForgetlessError(f"{name}.weight_scale has shape {tuple(scales.shape)} for a {rows} × {columns} "
                                  f"weight in groups of {group_size}")
        if args.get("symmetric", True):
            zeros = torch.full(scales.shape, 2 ** (bits - 1), dtype=torch.uint8)
        else:
            zeros = unpack_int32(tensors.pop(f"{name}.weight_zero_point").T, bits, rows).T
        return cls(bits, group_size, unpack_int32(packed, bits, columns), scales.float(), zeros.contiguous(),
                   args.get("actorder"), args.get("strategy"))


class _GridRule:
    """GPTQ's rounding as a ``ColumnRule`` on the permuted, transposed weight (``in × out``): grids per group
    (``groups × out``), taken up front (static) or when the sweep reaches a group (module docstring)."""

    def __init__(self, weight_t: torch.Tensor, perm: torch.Tensor, fmt: QuantFormat, static: bool):
        if fmt.bits not in GROUPED_BITS:
            raise ValueError(f"bits must be one of {GROUPED_BITS}, got {fmt.bits}")
        cols = weight_t.shape[0]
        size = cols if fmt.group_size == -1 else fmt.group_size
        if not 1 <= size <= cols:
            raise ValueError(f"group_size {fmt.group_size} does not fit the {cols} input columns (1..{cols} or -1)")
        self.size, self.bits, self.symmetric = size, fmt.bits, fmt.symmetric
        self.pruned_t = weight_t == 0  # exact zeros stay zero (a pruned model's pattern survives quantization)
        self.group_of = (perm // size).tolist()
        groups = -(-cols // size)
        self.scales = torch.zeros(groups, weight_t.shape[1], dtype=torch.float64)
        self.zeros = torch.zeros_like(self.scales)
        self.codes = torch.zeros_like(weight_t)
        self.ready = [static] * groups
        if static:  # every grid from the original weights (out × in, natural order)
            natural = torch.empty_like(weight_t)
            natural[perm] = weight_t
            for g in range(groups):
                self.scales[g], self.zeros[g] = group_grid(natural.T[:, g * size:(g + 1) * size], self.bits,
                                                           self.symmetric)

    def start_block(self, start: int, end: int, weight_t: torch.Tensor) -> None:
        pass

    def fix(self, index: int, column: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
        g = self.group_of[index]
        if not self.ready[g]:  # natural order: the group starts here; its grid from the current weights
            self.scales[g], self.zeros[g] = group_grid(weight_t[index:index + self.size].T, self.bits, self.symmetric)
            self.ready[g] = True
        scale, zero = self.scales[g], self.zeros[g]
        code = torch.where(self.pruned_t[index], zero, round_codes(column, scale, zero, self.bits))
        self.codes[index] = code
        return scale * (code - zero)

    def results(self, perm: torch.Tensor, segments: list[slice]) -> list[GroupedInts]:
        """Each linear's codes (``segments``: its rows), in natural column order."""
        codes = torch.empty_like(self.codes)
        codes[perm] = self.codes
        scales, zeros = self.scales.T.to(torch.float32), self.zeros.T.to(torch.uint8)
        return [GroupedInts(self.bits, self.size, codes[:, rows].T.to(torch.uint8).contiguous(),
                            scales[rows].contiguous(), zeros[rows].contiguous())
                for rows in segments]


# ----- dense int32 bit packing -------------------------------------------------------------------------
def pack_int32(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """``rows × n`` codes (each below ``2^bits``) → ``int32`` rows of ``⌈n · bits / 32⌉`` words: bit ``k``
    of code ``j`` is bit ``(j·bits + k) mod 32`` of word ``(j·bits + k) // 32`` (two's complement)."""
    if bits not in GROUPED_BITS:
        raise ValueError(f"packing supports {GROUPED_BITS} bits, got {bits}")
    codes = codes.to(torch.int64)
    if codes.numel() and (int(codes.min()) < 0 or int(codes.max()) >= 2 ** bits):
        raise ValueError(f"a code lies outside [0, {2 ** bits - 1}] for {bits} bits")
    rows, n = codes.shape
    start = torch.arange(n) * bits
    word, offset = start // 32, start % 32
    words = torch.zeros(rows, -(-n * bits // 32) + 1, dtype=torch.int64)
    words.index_add_(1, word, (codes << offset) & 0xFFFFFFFF)  # codes of one word never overlap: sum = or
    words.index_add_(1, word + 1, codes >> (32 - offset))      # the high bits of a code straddling two words
    words = words[:, :-1]
    return torch.where(words >= 2 ** 31, words - 2 ** 32, words).to(torch.int32)


def unpack_int32(packed: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of ``pack_int32`` for rows of ``n`` codes (``uint8``)."""
    if bits not in GROUPED_BITS:
        raise ValueError(f"packing supports {GROUPED_BITS} bits, got {bits}")
    if packed.dtype != torch.int32 or packed.dim() != 2 or packed.shape[1] != -(-n * bits // 32):
        raise ValueError(f"packed codes of shape {tuple(packed.shape)} ({packed.dtype}) do not hold rows of {n} "
                         f"{bits}-bit codes")
    words = torch.nn.functional.pad(packed.to(torch.int64) & 0xFFFFFFFF, (0, 1))
    start = torch.arange(n) * bits
    word, offset = start // 32, start % 32
    pair = words[:, word] | (words[:, word + 1] << 32)
    return ((pair >> offset) & (2 ** bits - 1)).to(torch.uint8)
