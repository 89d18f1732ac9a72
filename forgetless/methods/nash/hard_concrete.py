"""Hard-concrete L0 gates (Louizos, Welling & Kingma 2018, "Learning Sparse Neural Networks through
L0 Regularization", §4 eq. 10-13) and the Lagrangian sparsity term of CoFi / NASH
(Xia et al. 2022 eq. 5; Ko et al. 2023 §4.2 and appendix B).

Pure tensor functions: a gate with parameter ``log_alpha`` draws

    u ~ U(0, 1),  s = σ((log u − log(1 − u) + log α) / β),  s̄ = s (ζ − γ) + γ,  z = min(1, max(0, s̄))

during training (stretched to (γ, ζ) = (−0.1, 1.1), then clipped, so exact zeros and ones occur),
has expected L0 norm  P(z ≠ 0) = σ(log α − β log(−γ / ζ))  (eq. 12), and the deterministic test
time value  ẑ = min(1, max(0, σ(log α)(ζ − γ) + γ))  (eq. 13).
"""
from __future__ import annotations

import math

import torch

BETA = 2.0 / 3.0
GAMMA = -0.1
ZETA = 1.1
EPS = 1e-6


def sample_gates(log_alpha: torch.Tensor, beta: float = BETA, gamma: float = GAMMA, zeta: float = ZETA,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    """One stretched-and-clipped hard-concrete sample per gate, differentiable in ``log_alpha``."""
    u = torch.rand(log_alpha.shape, generator=generator, device=log_alpha.device, dtype=log_alpha.dtype)
    u = u.clamp(EPS, 1 - EPS)
    s = torch.sigmoid((torch.log(u) - torch.log1p(-u) + log_alpha) / beta)
    return (s * (zeta - gamma) + gamma).clamp(0.0, 1.0)


def prob_nonzero(log_alpha: torch.Tensor, beta: float = BETA, gamma: float = GAMMA, zeta: float = ZETA) -> torch.Tensor:
    """Expected L0 norm of each gate, ``P(z ≠ 0) = 1 − Q(s̄ ≤ 0) = σ(log α − β log(−γ/ζ))`` (eq. 12)."""
    return torch.sigmoid(log_alpha - beta * math.log(-gamma / zeta))


def deterministic_gates(log_alpha: torch.Tensor, gamma: float = GAMMA, zeta: float = ZETA) -> torch.Tensor:
    """Test-time gate values ``ẑ = clip(σ(log α)(ζ − γ) + γ, 0, 1)`` (eq. 13)."""
    return (torch.sigmoid(log_alpha) * (zeta - gamma) + gamma).clamp(0.0, 1.0)


def lagrangian_term(expected_sparsity: torch.Tensor, target: float, lambda_1: torch.Tensor,
                    lambda_2: torch.Tensor) -> torch.Tensor:
    """``R = λ1 (ŝ − t) + λ2 (ŝ − t)²`` (CoFi eq. 5, NASH §4.2). The model minimises R over its
    gates; λ1, λ2 are trained by gradient *ascent* (see ``ascent``), so they grow until the
    expected sparsity ŝ meets the target t."""
    gap = expected_sparsity - target
    return lambda_1 * gap + lambda_2 * gap * gap


def ascent(parameter: torch.nn.Parameter) -> torch.nn.Parameter:
    """Make an ordinary (minimising) optimiser do gradient ascent on ``parameter`` by negating its
    gradient (optimisers reject a negative learning rate)."""
    parameter.register_hook(lambda grad: -grad)
    return parameter


def target_at(step: int, final_target: float, warmup_steps: int) -> float:
    """Sparsity target raised linearly from 0 to ``final_target`` over ``warmup_steps``, then fixed."""
    if warmup_steps <= 0:
        return final_target
    return final_target * min(1.0, step / warmup_steps)


def budget_mask(scores: torch.Tensor, costs: torch.Tensor, budget: float) -> torch.Tensor:
    """Keep units by decreasing ``scores`` while their summed ``costs`` fit in ``budget``; returns a
    boolean keep mask. Used to turn learned log α into deterministic masks that reach a target."""
    order = torch.argsort(scores, descending=True, stable=True)
    keep = torch.zeros_like(scores, dtype=torch.bool)
    spent = 0.0
    for i in order.tolist():
        cost = float(costs[i])
        if spent + cost <= budget + 1e-6:
            keep[i] = True
            spent += cost
    return keep
