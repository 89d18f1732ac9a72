"""Quantized models in plain tensors: apply int8 / bf16 quantization, describe it in the manifest,
save it to safetensors and rebuild it from there (no pickle, no ``torch.save``).

Two weight formats, recorded under ``quantization`` in ``forgetless.json``:

* ``bf16``: every floating-point tensor of the model cast to bfloat16; ``model.safetensors`` holds
  them as ``BF16`` tensors under their usual names (stock ``from_pretrained`` reads them too).
* ``int8``: dynamic quantization (Jacob et al. 2018, "Quantization and Training of Neural Networks
  for Efficient Integer-Arithmetic-Only Inference", eq. 1 ``r = S (q − Z)``): each listed
  ``nn.Linear`` keeps int8 weights with one scale ``S`` and zero point ``Z`` per output channel;
  activations are quantized per batch at run time (PyTorch's fbgemm / onednn kernels). For each
  quantized module ``M`` the file holds ``M.weight.int8`` (int8, out × in), ``M.weight.scale``
  (float64, out), ``M.weight.zero_point`` (int64, out) and ``M.bias`` (float32); every other
  tensor (embeddings, layer norms, heads not quantized) under its usual name.

* ``grouped``: weight-only integer codes with a per-group grid (GPTQ, Frantar et al. 2022, §4
  "grouping"): each listed Linear's (out × in) weight is ``w = S · (q − Z)`` with ``b``-bit codes
  ``q`` and, per output row and per group of ``group_size`` consecutive input columns, a float32
  scale ``S`` and a ``b``-bit zero point ``Z``. The file holds ``M.weight.packed`` (uint8, each row's
  codes as one little-endian bit stream: ``ceil(in · b / 8)`` bytes a row, so 4-bit codes two to a
  byte), ``M.weight.scales`` (float32, out × groups) and ``M.weight.zeros`` (uint8, the zero points
  packed the same way); ``M.bias`` under its usual name. The in-memory model keeps dense float32
  weights equal to ``S · (q − Z)`` plus the codes (``GroupedInts`` on the module), so it runs on any
  CPU but no faster: the saving is on disk (about ``b + 32 / group_size + b / group_size`` bits a
  weight). Loading rebuilds the same float32 weights from the codes, bit for bit.

Loading rebuilds the fp32 architecture, applies the same quantization to the same module names,
then puts the stored int8 weights, scales and zero points (or grouped codes) back: the rebuilt model
computes exactly what was saved.
"""
from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from safetensors.torch import load_model as load_safetensors
from safetensors.torch import save_model as save_safetensors
from torch import nn

from ..errors import ForgetlessError
from .sites import weight_matrix

DTYPES = ("int8", "bf16", "grouped")
INT8_SCHEME = "dynamic int8: per-output-channel affine weights (S, Z), activations quantized per batch"
GROUPED_SCHEME = ("weight-only grouped ints: w = S·(q − Z) per output row and group of input columns; codes and "
                  "zero points packed as little-endian bit streams, float32 scales; float32 weights at load")
GROUPED_BITS = (2, 3, 4, 8)
GROUPED_ATTR = "grouped_ints"  # the attribute holding a Linear's ``GroupedInts``


# ----- grouped integer codes (GPTQ's storage) ---------------------------------------------------------
def pack_codes(codes: torch.Tensor, bits: int) -> torch.Tensor:
    """``rows × n`` codes (each below ``2^bits``) → ``uint8`` rows of ``ceil(n · bits / 8)`` bytes: bit
    ``k`` of code ``j`` is bit ``(j · bits + k) mod 8`` of byte ``(j · bits + k) // 8`` (so 4-bit code
    ``2i`` is byte ``i``'s low nibble, ``2i + 1`` its high nibble)."""
    if bits not in GROUPED_BITS:
        raise ValueError(f"packing supports {GROUPED_BITS} bits, got {bits}")
    codes = codes.to(torch.int64)
    if codes.numel() and (int(codes.min()) < 0 or int(codes.max()) >= 2 ** bits):
        raise ValueError(f"a code lies outside [0, {2 ** bits - 1}] for {bits} bits")
    rows, n = codes.shape
    stream = ((codes.unsqueeze(2) >> torch.arange(bits)) & 1).reshape(rows, n * bits)
    stream = torch.nn.functional.pad(stream, (0, -(n * bits) % 8)).reshape(rows, -1, 8)
    return (stream << torch.arange(8)).sum(dim=2).to(torch.uint8)


def unpack_codes(packed: torch.Tensor, bits: int, n: int) -> torch.Tensor:
    """Inverse of ``pack_codes`` for rows of ``n`` codes (``uint8``)."""
    if bits not in GROUPED_BITS:
        raise ValueError(f"packing supports {GROUPED_BITS} bits, got {bits}")
    if packed.dtype != torch.uint8 or packed.dim() != 2 or packed.shape[1] != -(-n * bits // 8):
        raise ValueError(f"packed codes of shape {tuple(packed.shape)} ({packed.dtype}) do not hold rows of {n} "
                         f"{bits}-bit codes")
    stream = ((packed.to(torch.int64).unsqueeze(2) >> torch.arange(8)) & 1).reshape(packed.shape[0], -1)
    codes = stream[:, :n * bits].reshape(-1, n, bits) << torch.arange(bits)
    return codes.sum(dim=2).to(torch.uint8)


@dataclass
class GroupedInts:
    """One Linear's weight as ``bits``-bit codes (``out × in``, uint8) with a float32 scale and an
    integer zero point per row and group of ``group_size`` input columns (``out × groups``)."""

    bits: int
    group_size: int
    codes: torch.Tensor
    scales: torch.Tensor
    zeros: torch.Tensor

    def dequantize(self) -> torch.Tensor:
        """``S · (q − Z)`` as float32 (computed in float64, so in memory and after loading alike)."""
        group = torch.arange(self.codes.shape[1], device=self.codes.device) // self.group_size
        scales, zeros = self.scales.to(torch.float64)[:, group], self.zeros.to(torch.float64)[:, group]
        return (scales * (self.codes.to(torch.float64) - zeros)).to(torch.float32)

    def packed(self, name: str) -> dict[str, torch.Tensor]:
        return {f"{name}.weight.packed": pack_codes(self.codes, self.bits),
                f"{name}.weight.scales": self.scales.to(torch.float32).contiguous(),
                f"{name}.weight.zeros": pack_codes(self.zeros, self.bits)}

    @classmethod
    def unpacked(cls, tensors: dict, name: str, bits: int, group_size: int, columns: int) -> GroupedInts:
        try:
            packed, scales, zeros = (tensors.pop(f"{name}.weight.{k}") for k in ("packed", "scales", "zeros"))
        except KeyError as exc:
            raise ForgetlessError(f"grouped module {name} has no {exc.args[0]}") from exc
        return cls(bits, group_size, unpack_codes(packed, bits, columns), scales,
                   unpack_codes(zeros, bits, scales.shape[1]))


def set_grouped(module: nn.Module, quantized: GroupedInts) -> None:
    """Give ``module`` (Linear or Conv1D) the weight ``quantized`` encodes and keep the codes on it."""
    with torch.no_grad():
        weight_matrix(module).copy_(quantized.dequantize())
    setattr(module, GROUPED_ATTR, quantized)


def grouped_modules(model: nn.Module) -> dict[str, GroupedInts]:
    """Modules carrying grouped codes whose weight still equals them (a weight changed after
    quantization, e.g. by a later method, is saved dense)."""
    found = {}
    for name, module in model.named_modules():
        quantized = getattr(module, GROUPED_ATTR, None)
        weight = getattr(module, "weight", None)
        if quantized is not None and isinstance(weight, torch.Tensor) and weight.dtype == torch.float32 \
                and torch.equal(weight_matrix(module), quantized.dequantize()):
            found[name] = quantized
    return found


def grouped_storage(quantized: dict[str, GroupedInts]) -> dict:
    """Weights covered and bytes stored (codes, scales, zero points) by grouped modules."""
    weights = sum(q.codes.numel() for q in quantized.values())
    stored = sum(t.numel() * t.element_size() for name, q in quantized.items() for t in q.packed(name).values())
    return {"weights": weights, "bytes": stored, "bits_per_weight": 8 * stored / weights if weights else None}


def _dynamic_linear():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.ao.nn.quantized.dynamic import Linear

    return Linear


def quantized_modules(model: nn.Module) -> list[str]:
    """Names of the int8 dynamically quantized Linear modules of ``model``."""
    linear = _dynamic_linear()
    return [name for name, module in model.named_modules() if isinstance(module, linear)]


def quantize_int8(model: nn.Module, names: list[str]) -> nn.Module:
    """Replace the ``nn.Linear`` (or ``Conv1D``) modules ``names`` by dynamically quantized int8 Linears, in place
    (``torch.ao.quantization.quantize_dynamic`` with per-channel weight observers; deprecated in
    favour of torchao, whose CPU int8 path needs ``torch.compile`` to be fast, so the eager fbgemm
    kernels are used here)."""
    for name in names:
        _conv1d_to_linear(model, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice, once per call
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        quantize_dynamic(model, {name: per_channel_dynamic_qconfig for name in names}, dtype=torch.qint8,
                         inplace=True)
    missing = sorted(set(names) - set(quantized_modules(model)))
    if missing:
        raise ForgetlessError(f"int8 quantization left these modules unquantized (not nn.Linear?): {missing[:5]}")
    return model


def _conv1d_to_linear(model: nn.Module, name: str) -> None:
    """transformers' ``Conv1D`` (GPT-2; weight stored in × out) becomes the equal ``nn.Linear``
    (weight out × in), so it can be quantized; loading does the same before restoring weights."""
    from transformers.pytorch_utils import Conv1D

    module = model.get_submodule(name)
    if not isinstance(module, Conv1D):
        return
    linear = nn.Linear(module.weight.shape[0], module.weight.shape[1], bias=module.bias is not None)
    with torch.no_grad():
        linear.weight.copy_(module.weight.t())
        if module.bias is not None:
            linear.bias.copy_(module.bias)
    parent, _, child = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, child, linear)


def cast_bf16(model: nn.Module) -> nn.Module:
    """Every floating-point parameter and buffer in bfloat16 (activations follow)."""
    model.to(torch.bfloat16)
    model.config.dtype = "bfloat16"
    return model


def describe(model: nn.Module) -> dict | None:
    """The manifest's ``quantization`` entry: dtype, scheme and quantized modules; None for fp32."""
    names = quantized_modules(model)
    if names:
        return {"dtype": "int8", "scheme": INT8_SCHEME, "modules": names}
    floats = {p.dtype for p in itertools.chain(model.parameters(), model.buffers()) if p.is_floating_point()}
    if floats == {torch.bfloat16}:
        return {"dtype": "bf16", "scheme": "every floating-point tensor in bfloat16", "modules": []}
    return None


def quantized_weight_counts(model: nn.Module) -> tuple[int, int]:
    """(elements, non-zero elements) of the int8 weights and biases: parameters ``model.parameters()``
    no longer lists once a Linear is quantized."""
    total = nonzero = 0
    for name in quantized_modules(model):
        module = model.get_submodule(name)
        weight, bias = module.weight(), module.bias()
        total += weight.numel() + (bias.numel() if bias is not None else 0)
        nonzero += int((weight.int_repr() != weight.q_per_channel_zero_points().view(-1, 1)).sum()
                       if weight.qscheme() == torch.per_channel_affine else (weight.dequantize() != 0).sum())
        nonzero += int((bias != 0).sum()) if bias is not None else 0
    return total, nonzero


# ----- save / load ------------------------------------------------------------------------------
def _plain_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters and persistent buffers, each shared tensor once (tied weights under one name)."""
    persistent = set(model.state_dict())
    return {name: tensor for name, tensor in itertools.chain(model.named_parameters(), model.named_buffers())
            if name in persistent}


def save_weights(model: nn.Module, folder: Path) -> dict | None:
    """Write ``folder/model.safetensors`` (quantized layouts above for int8 or grouped models) and
    return the manifest's ``quantization`` entry (None for an unquantized model)."""
    entry = describe(model)
    path = str(Path(folder) / "model.safetensors")
    grouped = grouped_modules(model) if entry is None else {}
    if grouped:
        return _save_grouped(model, grouped, path)
    if entry is None or entry["dtype"] == "bf16":
        save_safetensors(model, path)
        return entry
    tensors = {name: tensor.detach().contiguous() for name, tensor in _plain_tensors(model).items()}
    for name in entry["modules"]:
        module = model.get_submodule(name)
        weight, bias = module.weight(), module.bias()
        if weight.qscheme() != torch.per_channel_affine:
            raise ForgetlessError(f"{name}: only per-channel int8 weights are saved, got {weight.qscheme()}")
        tensors[f"{name}.weight.int8"] = weight.int_repr().contiguous()
        tensors[f"{name}.weight.scale"] = weight.q_per_channel_scales().contiguous()
        tensors[f"{name}.weight.zero_point"] = weight.q_per_channel_zero_points().contiguous()
        if bias is not None:
            tensors[f"{name}.bias"] = bias.detach().contiguous()
    save_file(tensors, path, metadata={"format": "forgetless-int8-dynamic"})
    return entry


def _save_grouped(model: nn.Module, grouped: dict[str, GroupedInts], path: str) -> dict:
    tensors = {name: tensor.detach().contiguous() for name, tensor in _plain_tensors(model).items()}
    for name, quantized in grouped.items():
        del tensors[f"{name}.weight"]
        tensors.update(quantized.packed(name))
    save_file(tensors, path, metadata={"format": "forgetless-grouped"})
    modules = {name: {"bits": q.bits, "group_size": q.group_size, "columns": q.codes.shape[1]}
               for name, q in grouped.items()}
    return {"dtype": "grouped", "scheme": GROUPED_SCHEME, "modules": modules, **grouped_storage(grouped)}


def load_weights(model: nn.Module, path: str, quantization: dict | None) -> tuple[list[str], list[str]]:
    """Load ``path`` into the freshly built ``model`` (quantized in place as the manifest says);
    returns ``(missing, unexpected)`` tensor names like safetensors' ``load_model``."""
    if quantization is None:
        return load_safetensors(model, path, strict=False)
    dtype = quantization.get("dtype")
    if dtype == "bf16":
        cast_bf16(model)
        return load_safetensors(model, path, strict=False)
    if dtype == "grouped":
        return _load_grouped(model, path, quantization["modules"])
    if dtype != "int8":
        raise ForgetlessError(f"{path}: unknown quantization dtype {dtype!r} in forgetless.json; known: {DTYPES}")
    names = quantization["modules"]
    quantize_int8(model, names)
    tensors = load_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized-tensor constructors are marked deprecated
        for name in names:
            try:
                ints, scale, zero = (tensors.pop(f"{name}.weight.{k}") for k in ("int8", "scale", "zero_point"))
            except KeyError as exc:
                raise ForgetlessError(f"{path}: quantized module {name} has no {exc.args[0]}") from exc
            weight = torch._make_per_channel_quantized_tensor(ints, scale, zero, 0)
            model.get_submodule(name).set_weight_bias(weight, tensors.pop(f"{name}.bias", None))
    return _copy_plain(model, tensors)


def _load_grouped(model: nn.Module, path: str, modules: dict) -> tuple[list[str], list[str]]:
    tensors = load_file(path)
    for name, spec in modules.items():
        try:
            quantized = GroupedInts.unpacked(tensors, name, int(spec["bits"]), int(spec["group_size"]),
                                             int(spec["columns"]))
            module = model.get_submodule(name)
        except (ForgetlessError, ValueError, KeyError, AttributeError) as exc:
            raise ForgetlessError(f"{path}: grouped module {name}: {exc}") from exc
        if tuple(quantized.codes.shape) != tuple(weight_matrix(module).shape):
            raise ForgetlessError(f"{path}: grouped module {name} holds {tuple(quantized.codes.shape)} codes for a "
                                  f"{tuple(weight_matrix(module).shape)} weight")
        set_grouped(module, quantized)
        tensors[f"{name}.weight"] = module.weight.detach()
    return _copy_plain(model, tensors)


def _copy_plain(model: nn.Module, tensors: dict) -> tuple[list[str], list[str]]:
    """Copy ``tensors`` into the model's parameters and buffers of the same names (quantized modules
    take no ``state_dict``); returns ``(missing, unexpected)`` names, copying nothing unless both are empty."""
    expected = _plain_tensors(model)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if not missing and not unexpected:
        with torch.no_grad():
            for name, tensor in tensors.items():
                expected[name].copy_(tensor)
    return missing, unexpected
