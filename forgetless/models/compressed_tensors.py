"""Weight-only integer quantization in memory (``GroupedInts``) and on disk as compressed-tensors'
``pack-quantized`` checkpoint, the format llm-compressor writes, transformers loads (with the
``compressed-tensors`` package installed) and vLLM serves.

In memory (GPTQ, Frantar et al. 2022, §4 "grouping"): a quantized Linear keeps dense float32 weights
``w = S · (q − Z)`` with ``b``-bit codes ``q`` (0 … 2^b − 1) and, per output row and per group of
``group_size`` consecutive input columns, a float32 scale ``S`` and an integer zero point ``Z``; the
codes stay on the module (``GroupedInts``), so it runs on any CPU, no faster than float32.

On disk (read from compressed-tensors 0.19 / 0.20 and an llm-compressor 0.14 output, described in
``tests/fixtures/llmcompressor_w4.json``): ``config.json`` gets ``quantization_config`` with
``quant_method: "compressed-tensors"``, ``format: "pack-quantized"``, ``quantization_status:
"compressed"`` and one config group per scheme (``targets: ["Linear"]``, every Linear left in float
named in ``ignore``). Each quantized Linear ``M`` stores, instead of ``M.weight``:

* ``M.weight_packed`` (int32, out × ⌈in · b / 32⌉): each row's codes as one dense little-endian bit
  stream, code ``j`` at bits ``j·b … j·b + b − 1`` (word ``k`` holds stream bits ``32k … 32k + 31``;
  3-bit codes straddle words). compressed-tensors reads a stored value ``v`` as the signed code
  ``v − 2^(b−1)``; forgetless's unsigned ``q`` is exactly that ``v``;
* ``M.weight_scale`` (float32, out × groups) and ``M.weight_shape`` (int64, [out, in]);
* asymmetric only: ``M.weight_zero_point`` (int32, ⌈out · b / 32⌉ × groups): the zero points packed
  the same way along the output dimension (compressed-tensors' signed ``Z − 2^(b−1)``). A symmetric
  grid has ``Z = 2^(b−1)`` (signed zero point 0) and stores none.

``ct_schemes.py`` writes and reads ``quantization_config`` (this format and the others).

compressed-tensors dequantizes ``(q − Z) · S`` in float32, which is bit for bit forgetless's
float32 weight (``q − Z`` is a small integer, so both round the same exact product once). Its
group strategy needs ``group_size`` to divide every quantized width (no partial last group):
``methods/quantize/grid.py`` refuses the rest before any work.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..errors import ForgetlessError
from .sites import weight_matrix

GROUPED_BITS = (2, 3, 4, 8)
GROUPED_ATTR = "grouped_ints"  # the attribute holding a Linear's ``GroupedInts``
FORMAT = "pack-quantized"


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

    def dequantize(self) -> torch.Tensor:
        """``S · (q − Z)`` as float32 (computed in float64, so in memory and after loading alike)."""
        group = torch.arange(self.codes.shape[1], device=self.codes.device) // self.group_size
        scales, zeros = self.scales.to(torch.float64)[:, group], self.zeros.to(torch.float64)[:, group]
        return (scales * (self.codes.to(torch.float64) - zeros)).to(torch.float32)

    @property
    def symmetric(self) -> bool:
        """Every zero point at the grid's middle ``2^(b−1)`` (stored without zero points)."""
        return bool((self.zeros.to(torch.int64) == 2 ** (self.bits - 1)).all())

    def weights_args(self) -> dict:
        """compressed-tensors' ``QuantizationArgs`` of this weight, keys as llm-compressor writes them."""
        channel = self.strategy == "channel" if self.strategy else \
            self.scales.shape[1] == 1 and self.group_size >= self.codes.shape[1]
        return {"actorder": self.actorder, "block_structure": None, "dynamic": False,
                "group_size": None if channel else self.group_size, "num_bits": self.bits,
                "observer": "memoryless_minmax", "observer_kwargs": {}, "scale_dtype": None,
                "strategy": "channel" if channel else "group", "symmetric": self.symmetric, "type": "int",
                "zp_dtype": None if self.symmetric else "torch.int8"}

    def stored(self, name: str) -> dict[str, torch.Tensor]:
        """The module's tensors in the checkpoint (names above)."""
        tensors = {f"{name}.weight_packed": pack_int32(self.codes, self.bits),
                   f"{name}.weight_scale": self.scales.to(torch.float32).contiguous(),
                   f"{name}.weight_shape": torch.tensor(list(self.codes.shape), dtype=torch.int64)}
        if not self.symmetric:
            tensors[f"{name}.weight_zero_point"] = pack_int32(self.zeros.T, self.bits).T.contiguous()
        return tensors

    @classmethod
    def from_stored(cls, tensors: dict, name: str, args: dict) -> GroupedInts:
        """Inverse of ``stored`` (pops the module's tensors from ``tensors``); ``args``: its scheme's weights."""
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


# ----- modules and config ------------------------------------------------------------------------------
def set_grouped(module: nn.Module, quantized: GroupedInts) -> None:
    """Give ``module`` (Linear or Conv1D) the weight ``quantized`` encodes and keep the codes on it."""
    with torch.no_grad():
        weight_matrix(module).copy_(quantized.dequantize())
    setattr(module, GROUPED_ATTR, quantized)


def grouped_modules(model: nn.Module) -> dict[str, GroupedInts]:
    """``nn.Linear`` modules carrying codes their float32 weight still equals: what the checkpoint stores
    packed. A weight changed after quantization (e.g. by a later method) and transformers' ``Conv1D``
    (GPT-2; compressed-tensors stores ``nn.Linear`` only) are saved as float32."""
    found = {}
    for name, module in model.named_modules():
        quantized = getattr(module, GROUPED_ATTR, None)
        if quantized is not None and type(module) is nn.Linear and module.weight.dtype == torch.float32 \
                and torch.equal(module.weight, quantized.dequantize()):
            found[name] = quantized
    return found


def unpacked_modules(model: nn.Module, packed: dict | None = None) -> list[str]:
    """Modules that were quantized but are saved as float32 (see ``grouped_modules``; ``packed``: its
    answer when the caller has it)."""
    packed = grouped_modules(model) if packed is None else packed
    return [name for name, module in model.named_modules() if hasattr(module, GROUPED_ATTR) and name not in packed]


def storage_note(method: str, storage: dict, form: str = FORMAT) -> str:
    """The card's note on what the quantized layers store (``grouped_storage``) in compressed-tensors ``form``."""
    if not storage.get("weights"):
        return f"{method}: no layer is stored quantized (compressed-tensors quantizes nn.Linear weights only)"
    return (f"{method}: stored as compressed-tensors {form}: {storage['bits_per_weight']:.3f} bits per weight "
            f"in the quantized layers ({storage['weights']:,} weights in {storage['bytes'] / 2 ** 20:.2f} MiB, float32 "
            f"would take {storage['weights'] * 4 / 2 ** 20:.2f} MiB)")


def grouped_storage(quantized: dict[str, GroupedInts]) -> dict:
    """Weights covered and bytes stored (codes, scales, zero points, shapes) by packed modules."""
    weights = sum(q.codes.numel() for q in quantized.values())
    stored = sum(t.numel() * t.element_size() for name, q in quantized.items() for t in q.stored(name).values())
    return {"weights": weights, "bytes": stored, "bits_per_weight": 8 * stored / weights if weights else None}
