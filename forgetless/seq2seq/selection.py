"""Decoder layer selection and distillation losses of NASH (Ko et al. 2023, §4.1 and §4.3).

Uniform selection keeps, of L decoder layers, the d_s layers (1-indexed)

    L_s = { ⌊(L − 1) / (d_s − 1)⌋ · ℓ + 1  |  ℓ = 0 … d_s − 1 }          (§4.1)

and the paper's comparison selections keep the lowest or the highest d_s layers (Table 3).
Edge cases: d_s ≥ L keeps every layer; d_s = 1 keeps layer 1 (the ℓ = 0 term of the formula).
Indices returned here are 0-based.

The objective (§4.3) is  L = L_pred + λ_enc L_h^enc + λ_dec L_h^dec + R  with L_pred the KL
divergence between teacher and student token distributions and L_h the MSE between a student
layer's output and the teacher layer it was initialised from.
"""
from __future__ import annotations

import torch
from torch import nn

from ..errors import ConfigError

STRATEGIES = ("uniform", "low", "high")


def select_layers(num_layers: int, keep: int, strategy: str = "uniform") -> list[int]:
    """0-based indices of the ``keep`` layers chosen out of ``num_layers``."""
    if num_layers < 1:
        raise ConfigError(f"a stack needs at least one layer, got {num_layers}")
    if keep < 1:
        raise ConfigError(f"keep at least one decoder layer (got {keep})")
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown layer selection {strategy!r}; choose from {', '.join(STRATEGIES)}")
    if keep >= num_layers:
        return list(range(num_layers))
    if strategy == "low":
        return list(range(keep))
    if strategy == "high":
        return list(range(num_layers - keep, num_layers))
    if keep == 1:
        return [0]
    step = (num_layers - 1) // (keep - 1)
    return [step * ell for ell in range(keep)]  # (⌊(L−1)/(d_s−1)⌋·ℓ + 1) − 1


def kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor,
            temperature: float = 1.0, direction: str = "forward") -> torch.Tensor:
    """Token-level KL divergence averaged over target tokens where ``mask`` is true.

    ``forward``: KL(p_teacher ‖ p_student), what the CoFi / NASH code computes
    (``kl_div(log_softmax(student), softmax(teacher))``); ``reverse``: KL(p_student ‖ p_teacher),
    the notation D_KL(p_s ‖ p_t) of the papers read literally. Scaled by T².
    """
    t = temperature
    log_s = torch.log_softmax(student_logits.float() / t, dim=-1)
    log_t = torch.log_softmax(teacher_logits.float() / t, dim=-1)
    if direction == "forward":
        per_token = (log_t.exp() * (log_t - log_s)).sum(-1)
    elif direction == "reverse":
        per_token = (log_s.exp() * (log_s - log_t)).sum(-1)
    else:
        raise ConfigError(f"kd direction must be 'forward' or 'reverse', got {direction!r}")
    mask = mask.to(per_token.dtype)
    return (per_token * mask).sum() / mask.sum().clamp_min(1.0) * t * t


def hidden_mse(student: list[torch.Tensor], teacher: list[torch.Tensor], pairs: list[tuple[int, int]],
               mask: torch.Tensor | None = None) -> torch.Tensor:
    """Σ over (student layer, teacher layer) pairs of the MSE between their outputs, averaged over
    non-padding positions (``mask``: batch × length)."""
    total = student[0].new_zeros(())
    for s, t in pairs:
        diff = (student[s].float() - teacher[t].float()) ** 2
        if mask is None:
            total = total + diff.mean()
        else:
            m = mask.to(diff.dtype)[..., None]
            total = total + (diff * m).sum() / (m.sum() * diff.shape[-1]).clamp_min(1.0)
    return total


class LayerOutputs:
    """Records the output hidden states of every layer of the given stacks (forward hooks), for
    hidden-state distillation; ``outputs[stack]`` lists them in layer order after a forward."""

    def __init__(self, model: nn.Module, stacks: dict[str, nn.ModuleList]):
        self.outputs: dict[str, list] = {name: [None] * len(layers) for name, layers in stacks.items()}
        self._handles = []
        for name, layers in stacks.items():
            for i, layer in enumerate(layers):
                self._handles.append(layer.register_forward_hook(self._hook(name, i)))

    def _hook(self, stack: str, index: int):
        def hook(module, args, output):
            self.outputs[stack][index] = output[0] if isinstance(output, tuple) else output

        return hook

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self) -> "LayerOutputs":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()
