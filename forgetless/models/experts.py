"""Mixture-of-experts blocks of transformers 5 as per-expert linear layers, for calibration.

transformers 5 keeps a block's experts in fused 3-D parameters (Mixtral, Qwen2/3-MoE, OLMoE,
Granite-MoE, GPT-OSS, …): ``gate_up_proj`` (E × 2I × H; ``up_proj`` E × I × H without a gate) and
``down_proj`` (E × H × I), transposed where the class says so, with optional biases; the classes
carry that description (``@use_experts_implementation``: ``has_gate``, ``has_bias``,
``is_transposed``, ``has_post_expert_norm``, ``_apply_gate``). One-shot methods calibrate linear
layers on their inputs, so ``linearized(model)`` gives each expert ``e`` of such a module its own
linear layers, ``experts.<e>.gate_up_proj`` (or ``up_proj``) and ``experts.<e>.down_proj``
(``ExpertLinear``: weight and bias are *views* of the fused parameters, so compressing them changes
the model), and runs the module expert by expert through them: each expert's linears see exactly
the tokens routed to it, weighted after its down projection as transformers does (the
``batched_mm`` computation). On the first call the result is compared with the module's own forward;
a module computing anything else is one error naming it. Quantization codes an expert's linears
received (``quantization.ints.GroupedInts``) are kept on the experts module (``EXPERT_CODES``) when
the context ends, for saving.

Modules with fused 3-D expert weights that do not carry that description (JetMoE, Llama 4) are
listed by ``unsupported_experts``: the methods refuse them unless ``ignore`` names them.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch import nn

from ..errors import UnsupportedModelError
from ..quantization.layers import GROUPED_ATTR
from .transformers_compat import post_expert_norm

EXPERT_CODES = "grouped_experts"  # on a fused experts module: {(parameter, expert): GroupedInts}


class ExpertLinear(nn.Linear):
    """One expert's projection: ``weight`` is ``parameter[expert]`` (its transpose where the module
    stores experts transposed), ``bias`` the expert's row of the bias: views, no copy."""

    def __init__(self, experts: nn.Module, parameter: str, expert: int):
        nn.Module.__init__(self)
        fused = getattr(experts, parameter)
        weight = fused.data[expert].T if experts.is_transposed else fused.data[expert]
        self.in_features, self.out_features = weight.shape[1], weight.shape[0]
        self.weight = nn.Parameter(weight, requires_grad=False)
        bias = getattr(experts, f"{parameter}_bias", None) if experts.has_bias else None
        self.bias = nn.Parameter(bias.data[expert], requires_grad=False) if bias is not None else None
        self.source = (parameter, expert)
        self.routed: torch.Tensor | None = None  # the flat token positions of its current inputs (set per call)


def is_fused_experts(module: nn.Module) -> bool:
    """A transformers experts module with the description above (``@use_experts_implementation``)."""
    first = "gate_up_proj" if getattr(module, "has_gate", None) else "up_proj"
    return hasattr(module, "has_gate") and all(
        isinstance(getattr(module, name, None), nn.Parameter) and getattr(module, name).dim() == 3
        for name in (first, "down_proj"))


def first_projection(experts: nn.Module) -> str:
    return "gate_up_proj" if experts.has_gate else "up_proj"


def unsupported_experts(root: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of modules under ``root`` holding 3-D expert weights (a class named
    ``…Experts``) that ``linearized`` cannot run expert by expert."""
    return [(name, module) for name, module in root.named_modules()
            if "expert" in type(module).__name__.lower() and not is_fused_experts(module)
            and any(p.dim() >= 3 for p in module.parameters(recurse=False))]


@contextlib.contextmanager
def linearized(model: nn.Module) -> Iterator[list[nn.Module]]:
    """Inside: every fused experts module of ``model`` runs expert by expert through its
    ``ExpertLinear`` children (module docstring); yields those modules. On leaving, the children are
    removed and their quantization codes kept on the module (``EXPERT_CODES``)."""
    modules = [module for module in model.modules() if is_fused_experts(module)]
    for module in modules:
        _attach(module)
    try:
        yield modules
    finally:
        for module in modules:
            _detach(module)


def _attach(experts: nn.Module) -> None:
    for index in range(getattr(experts, first_projection(experts)).shape[0]):
        expert = nn.Module()
        for parameter in (first_projection(experts), "down_proj"):
            setattr(expert, parameter, ExpertLinear(experts, parameter, index))
        experts.add_module(str(index), expert)
    experts.forward = _ExpertLoop(experts)  # an instance attribute: the class forward stays for the check


def _detach(experts: nn.Module) -> None:
    codes = getattr(experts, EXPERT_CODES, {})
    for index in range(getattr(experts, first_projection(experts)).shape[0]):
        expert = experts._modules.pop(str(index))
        for linear in expert.children():
            if getattr(linear, GROUPED_ATTR, None) is not None:
                codes[linear.source] = getattr(linear, GROUPED_ATTR)
    if codes:
        setattr(experts, EXPERT_CODES, codes)
    experts.__dict__.pop("forward", None)


class _ExpertLoop:
    """The forward of a linearized experts module (transformers' ``batched_mm`` computation, one
    expert at a time through its linears); its first call is checked against the class forward."""

    def __init__(self, experts: nn.Module):
        self.experts, self.checked = experts, False

    def __call__(self, hidden_states, top_k_index, top_k_weights):
        out = self.run(hidden_states, top_k_index, top_k_weights)
        if not self.checked:
            self.checked = True
            own = type(self.experts).forward(self.experts, hidden_states, top_k_index, top_k_weights)
            if own.shape != out.shape or not torch.allclose(own, out, rtol=1e-4, atol=1e-5 * float(own.abs().max())):
                raise UnsupportedModelError(
                    f"{type(self.experts).__name__}: running its experts one by one does not reproduce its own forward "
                    f"(max difference {float((own - out).abs().max()):.3g}); forgetless cannot calibrate them")
        return out

    def run(self, hidden_states, top_k_index, top_k_weights):
        experts = self.experts
        out = torch.zeros_like(hidden_states, dtype=torch.promote_types(hidden_states.dtype, torch.float32))
        for index in range(getattr(experts, first_projection(experts)).shape[0]):
            token, slot = torch.where(top_k_index == index)
            if not len(token):
                continue
            linears = experts._modules[str(index)]
            for linear in linears.children():
                linear.routed = token  # calibration counts real tokens only (``sequential._accumulate``)
            projected = getattr(linears, first_projection(experts))(hidden_states[token])
            projected = experts._apply_gate(projected) if experts.has_gate else experts.act_fn(projected)
            projected = linears.down_proj(projected)
            norm = post_expert_norm(experts)
            if norm is not None:
                projected = norm(projected)
            out.index_add_(0, token, projected.to(out.dtype) * top_k_weights[token, slot, None].to(out.dtype))
        return out.to(hidden_states.dtype)
