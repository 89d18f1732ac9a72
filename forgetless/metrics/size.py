"""Parameter counts (total, inside the transformer layers, non-zero) and on-disk size."""
from __future__ import annotations

from pathlib import Path

from torch import nn

from ..models.adapters import get_adapter
from ..models.quantized_io import quantized_weight_counts


def parameter_counts(model: nn.Module) -> dict:
    """Counts read from the modules: every distinct tensor once (tied weights are not doubled)."""
    seen, total, nonzero = set(), 0, 0
    for p in model.parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        total += p.numel()
        nonzero += int((p != 0).sum())
    quantized, quantized_nonzero = quantized_weight_counts(model)  # int8 Linears hold no nn.Parameter
    total, nonzero = total + quantized, nonzero + quantized_nonzero
    adapter = get_adapter(model)
    layers = adapter.layer_parameters(model) + sum(quantized_weight_counts(stack)[0]
                                                   for stack in adapter.stacks(model).values())
    prunable = [lin.weight for _, lin in adapter.prunable_linears(model)]
    prunable_total = sum(w.numel() for w in prunable)
    prunable_zero = sum(int((w == 0).sum()) for w in prunable)
    return {
        "total": total,
        "quantized": quantized,
        "layers": layers,
        "nonzero": nonzero,
        "prunable_weights": prunable_total,
        "prunable_sparsity": prunable_zero / prunable_total if prunable_total else 0.0,
    }


def disk_size(path: str | Path) -> int:
    """Bytes of every file below ``path``."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def bits_per_parameter(folder: str | Path, parameters: int) -> float | None:
    """``8 · bytes of folder/model.safetensors / parameters``: 32 for float32 weights, less for packed
    quantized ones (GPTQ 4-bit, group 128: about 4.3 in the quantized layers, embeddings stay float32);
    None without the file."""
    weights = Path(folder) / "model.safetensors"
    return 8 * weights.stat().st_size / parameters if weights.is_file() and parameters else None
