"""A linear layer carrying its codes: the float32 weight they encode, the codes themselves (``GROUPED_ATTR``:
``ints.GroupedInts``, ``fp8.FloatCodes`` or any registered codes) and its inputs' quantization
(``inputs.quantize_inputs``); which layers of a model the checkpoint stores quantized."""
from __future__ import annotations

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

from .format import QuantFormat
from .inputs import InputQuant, quantize_inputs

GROUPED_ATTR = "grouped_ints"  # the attribute holding a Linear's codes


def _matrix(module: nn.Module) -> torch.Tensor:
    """The (out × in) weight data of an ``nn.Linear`` or of a ``Conv1D`` (a transposed view)."""
    return module.weight.data.T if isinstance(module, Conv1D) else module.weight.data


def set_grouped(module: nn.Module, quantized) -> None:
    """Give ``module`` (Linear or Conv1D) the weight ``quantized`` encodes and keep the codes on it."""
    with torch.no_grad():
        _matrix(module).copy_(quantized.dequantize())
    setattr(module, GROUPED_ATTR, quantized)


def attach(module: nn.Module, codes, inputs: InputQuant | None, fmt: QuantFormat) -> None:
    """``module`` computes with ``codes``' weight and, when ``inputs``, quantized inputs; the codes record the
    strategy ``fmt`` asks for (``channel`` for -1, else ``group``, even where one group spans the row)."""
    codes.strategy = fmt.strategy
    set_grouped(module, codes)
    quantize_inputs(module, inputs)


def grouped_modules(model: nn.Module) -> dict:
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

