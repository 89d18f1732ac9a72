"""Activation outliers against one int8 scale per tensor (Dettmers et al. 2022, "LLM.int8()", §3; Xiao
et al. 2023, "SmoothQuant", §3: a few input features of an LLM's linear layers are orders of magnitude
larger than the rest, so a per-tensor scale rounds the rest to zero).

``outlier_report`` runs a few texts through the model before ``quantize int8-per-tensor`` and, for each
quantized Linear's input ``x``, measures the largest ``|x|`` against the median ``|x|`` and the share of
inputs within half a step of zero on the per-tensor affine int8 grid (step ``(max − min) / 255``: they
round to the zero point, i.e. to 0), which is what makes that scheme lossy on LLMs.
"""
from __future__ import annotations

import torch
from torch import nn

from ...models.gates import HookSet

TEXTS = 4
LOSSY = 0.5  # warn when a layer rounds more than half of its inputs to zero


def _probe(ctx) -> dict | None:
    """A few tokenized texts: the calibration texts, else the task's training inputs (None: neither)."""
    if getattr(ctx, "calibration", None) and getattr(ctx, "tokenizer", None) is not None:
        return dict(ctx.tokenizer(ctx.calibration[:TEXTS], return_tensors="pt", padding=True, truncation=True,
                                  max_length=128))
    if getattr(ctx, "task", None) is not None and getattr(ctx, "kind", None) is not None:
        return ctx.probe_inputs(TEXTS)
    return None


def input_statistics(model: nn.Module, names: list[str], inputs: dict) -> dict[str, dict]:
    """Per Linear of ``names``: largest and median ``|x|`` of its real-token inputs and the share that a
    per-tensor affine int8 grid rounds to zero."""
    mask = inputs.get("attention_mask")
    found: dict[str, dict] = {}

    def keep(name: str):
        def hook(module, args):
            x = args[0].detach().float()
            if mask is not None and mask.shape == x.shape[:-1]:
                x = x[mask.bool()]
            step = (x.max().clamp_min(0) - x.min().clamp_max(0)) / 255
            magnitude = x.abs().flatten()
            found[name] = {"absmax": float(magnitude.max()), "median": float(magnitude.median()),
                           "zero_share": float((magnitude < step / 2).float().mean())}
        return hook

    with HookSet() as hooks, torch.no_grad():
        for name in names:
            hooks.add(model.get_submodule(name).register_forward_pre_hook(keep(name)))
        model(**inputs)
    return found


def outlier_report(model: nn.Module, names: list[str], ctx) -> dict:
    """The warning ``quantize int8-per-tensor`` gives on a decoder LLM, with what it measured."""
    advice = ("LLM deployments quantize inputs per token: --dtype int8-per-token (or int8), or --scheme W8A8-INT8 "
              "(SmoothQuant + GPTQ)")
    inputs = _probe(ctx)
    if inputs is None:
        return {"warn": True, "measured": False,
                "text": f"quantize int8-per-tensor on a decoder LLM: one activation scale per tensor; LLM activations "
                        f"have outlier features that round most other inputs to 0 (not measured here: no texts); "
                        f"{advice}"}
    stats = input_statistics(model, names, inputs)
    worst = max(stats, key=lambda n: stats[n]["zero_share"])
    lossy = sum(1 for s in stats.values() if s["zero_share"] > LOSSY)
    w = stats[worst]
    text = (f"quantize int8-per-tensor on a decoder LLM: one activation scale per tensor; on {len(inputs['input_ids'])} "
            f"texts the inputs of {worst} reach {w['absmax']:.3g} = {w['absmax'] / max(w['median'], 1e-12):,.0f}× their "
            f"median |x|, so {w['zero_share']:.0%} of them round to 0; {lossy} of {len(stats)} layers lose more than "
            f"half their inputs; {advice}")
    return {"warn": lossy > 0, "measured": True, "text": text, "worst": {"module": worst, **w},
            "layers_losing_half": lossy, "layers": len(stats)}
