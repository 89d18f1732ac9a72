"""Parameter counts (total, inside the transformer layers, non-zero), on-disk size and the bits a
weight takes as stored (``stored_bits``: packed compressed-tensors layers, and the whole file)."""
from __future__ import annotations

import math
from pathlib import Path

import torch
from safetensors import safe_open
from torch import nn

from ..models.adapters import get_adapter
from ..models.checks import tensor_header, weights_file
from ..models.io import quantized_weight_counts


def parameter_counts(model: nn.Module) -> dict:
    """Counts read from the modules: every distinct tensor once (tied weights are not doubled), and
    read once: the prunable weights' zeros come from the same count (``count_nonzero``, no boolean
    copy of the weights)."""
    nonzeros: dict[int, int] = {}  # id of a tensor → its non-zero elements
    total = 0
    for p in model.parameters():
        if id(p) not in nonzeros:
            nonzeros[id(p)] = int(torch.count_nonzero(p))
            total += p.numel()
    nonzero = sum(nonzeros.values())
    quantized, quantized_nonzero = quantized_weight_counts(model)  # int8 Linears hold no nn.Parameter
    total, nonzero = total + quantized, nonzero + quantized_nonzero
    adapter = get_adapter(model)
    layers = adapter.layer_parameters(model) + sum(quantized_weight_counts(stack)[0]
                                                   for stack in adapter.stacks(model).values())
    prunable = [lin.weight for _, lin in adapter.prunable_linears(model)]
    prunable_total = sum(w.numel() for w in prunable)
    prunable_zero = sum(w.numel() - (nonzeros[id(w)] if id(w) in nonzeros else int(torch.count_nonzero(w)))
                        for w in prunable)
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
    """``8 · bytes of the weights file / parameters``: 32 for float32 weights, less for packed quantized
    ones (GPTQ 4-bit, group 128: about 4.4 in the quantized layers, embeddings stay float32); None
    without the file."""
    weights = weights_file(folder)
    return 8 * weights.stat().st_size / parameters if weights.is_file() and parameters else None


ITEM_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
              "F8_E4M3": 1}


def stored_bits(folder: str | Path) -> dict:
    """What a saved model folder stores, from its weights file (header, and each ``weight_shape``):

    * ``quantized``: the compressed-tensors layers (any with a ``weight_scale``): ``weights`` (their out ×
      in), ``bytes`` (every tensor of the layer but its bias: codes, scales, zero points, shapes, static input
      scales) and ``bits_per_weight`` (None without such layers);
    * ``overall``: ``parameters`` (quantized weights counted one each, every other tensor element
      too), ``bytes`` of tensor data and ``bits_per_parameter``;
    * ``file_bytes`` (the weights file with its header) and ``disk_bytes`` (the whole folder).
    """
    path = weights_file(folder)
    header = tensor_header(path)
    nbytes = {name: math.prod(shape) * ITEM_BYTES[dtype] for name, (shape, dtype) in header.items()}
    modules = sorted(name[:-len(".weight_scale")] for name in header if name.endswith(".weight_scale"))
    with safe_open(str(path), framework="pt") as handle:  # packed: weight_shape; int8 / fp8: the weight itself
        weights = {m: math.prod(handle.get_tensor(f"{m}.weight_shape").tolist() if f"{m}.weight_shape" in header
                                else header[f"{m}.weight"][0]) for m in modules}
    packed = {n for n in header if n.rpartition(".")[0] in modules and not n.endswith(".bias")}  # codes, scales, …
    q_weights, q_bytes = sum(weights.values()), sum(nbytes[n] for n in packed)
    parameters = q_weights + sum(math.prod(header[n][0]) for n in header if n not in packed)
    total = sum(nbytes.values())
    return {"quantized": {"layers": len(modules), "weights": q_weights, "bytes": q_bytes,
                          "bits_per_weight": 8 * q_bytes / q_weights if q_weights else None},
            "overall": {"parameters": parameters, "bytes": total,
                        "bits_per_parameter": 8 * total / parameters if parameters else None},
            "file_bytes": path.stat().st_size, "disk_bytes": disk_size(folder)}


def started_from(source: dict, folder: str | Path | None) -> dict | None:
    """The file the user started from, on disk: ``{"path", "bytes", "what"}``. A converted base
    (``--model smollm2``: its ``provenance.source_file``, the 4-bit GGUF) is not its float32 folder;
    any other base is its folder (None without one)."""
    recorded = (source or {}).get("provenance") or {}
    original = Path(recorded["source_file"]) if recorded.get("source_file") else None
    if original is not None and original.is_file():
        return {"path": str(original), "bytes": original.stat().st_size,
                "what": f"{recorded.get('model', 'the base')} as given ({original.name})"}
    if folder is not None and Path(folder).is_dir():
        return {"path": str(folder), "bytes": disk_size(folder), "what": "the base folder"}
    return None


def stored_size(folder: str | Path | None) -> dict | None:
    """``stored_bits`` of a saved model folder, or None (no folder, or weights not in safetensors:
    dynamic int8)."""
    if folder is None or not weights_file(folder).is_file():
        return None
    return stored_bits(folder)
