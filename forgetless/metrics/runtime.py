"""Evaluate and time the compressed model *as it will be deployed*: the runtime it runs under, and
how often its predictions agree with the fp32 PyTorch base measured in the same run.

Runtimes (``EvalConfig.runtime``, CLI ``--runtime``):

* ``torch``: the compressed model as it is (fp32, or as a ``quantize`` method left it);
* ``torch-bf16``: a bfloat16 copy of it (every weight and activation; see ``methods/quantize.py``);
* ``onnxruntime``: the ONNX graph of ``forgetless.export.export_onnx`` (checked against PyTorch on
  export) run by an onnxruntime CPU session with thread spinning off (classifiers only).

The base model is always run in fp32 PyTorch, so accuracy deltas and speedups compare the deployed
compressed model with the uncompressed original. Prediction agreement of a set is
``agreement = (1/n) Σ_i 1[ŷ_i^deployed = ŷ_i^base]`` (for generation: identical output texts).
"""
from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn

from ..errors import ConfigError
from ..models.io import cast_bf16, describe


class OrtClassifier(nn.Module):
    """A sequence classifier run by onnxruntime behind the PyTorch call signature (``.logits`` out).
    It keeps the PyTorch model as ``source`` (for its config, device and parameter counts)."""

    def __init__(self, source: nn.Module, session, input_names: list[str]):
        super().__init__()
        self.source, self.session, self.input_names = source, session, input_names
        self.config = source.config

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, **_):
        from transformers.modeling_outputs import SequenceClassifierOutput

        given = {"input_ids": input_ids, "attention_mask": attention_mask if attention_mask is not None
                 else torch.ones_like(input_ids),
                 "token_type_ids": token_type_ids if token_type_ids is not None else torch.zeros_like(input_ids)}
        feeds = {name: given[name].cpu().numpy() for name in self.input_names}
        return SequenceClassifierOutput(logits=torch.from_numpy(self.session.run(None, feeds)[0]))


def deploy(model: nn.Module, runtime: str, kind, work_dir: str | Path) -> nn.Module:
    """``model`` as ``runtime`` runs it (see the module docstring; ``EvalConfig.runtime`` checked the
    name); ``model`` itself is not changed."""
    if runtime == "torch":
        return model
    supported = getattr(kind, "runtimes", ("torch",))
    if runtime not in supported:
        raise ConfigError(f"runtime {runtime!r} is not available for the {kind.name} model kind "
                          f"(it runs under: {', '.join(supported)})")
    quantization = describe(model)
    if quantization and quantization["dtype"] == "int8":
        raise ConfigError(f"runtime {runtime!r} cannot run an int8-quantized PyTorch model (quantized modules "
                          "neither cast to bf16 nor export to ONNX); use --runtime torch")
    if runtime == "torch-bf16":
        return cast_bf16(copy.deepcopy(model)).eval()
    if quantization:
        raise ConfigError("runtime 'onnxruntime' exports fp32 graphs; this model is bf16: use --runtime torch")
    from ..export import export_onnx, ort_session

    exported = export_onnx(model, Path(work_dir) / "onnx", threads=torch.get_num_threads())
    session = ort_session(exported["files"]["model"], threads=torch.get_num_threads())
    return OrtClassifier(model, session, exported["inputs"]["model"]).eval()


def agreement(predictions: dict) -> dict:
    """Share of identical predictions of the compressed (deployed) model and the base, per set and
    pooled over every set: ``{"sets": {name: share}, "pooled": share, "n": count}``."""
    per_set, same, total = {}, 0, 0
    for name, base in predictions["base"].items():
        key = next((k for k in ("predicted", "generated") if k in base), None)
        if key is None:
            continue
        a, b = base[key], predictions["compressed"][name][key]
        equal = sum(x == y for x, y in zip(a, b))
        per_set[name] = equal / len(a) if a else None
        same, total = same + equal, total + len(a)
    return {"sets": per_set, "pooled": same / total if total else None, "n": total}

