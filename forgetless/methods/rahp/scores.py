"""Pure tensor math for attention-head scoring and selection (no model in here).

* Michel et al. (2019), "Are Sixteen Heads Really Better than One?", eq. for head importance
  ``I_h = E_x |∂L(x)/∂ξ_h|`` (ξ_h the head gate), optionally normalised per layer by its ℓ2 norm;
  the lowest-scoring heads are pruned globally (as used in Du et al., §3.1).
* RAHP, "Robustness-Aware Head Pruning for certified Transformer models", Algorithm 1:
  margin ``g(z) = z_c − max_{c'≠c} z_c'``; per-sample ratio ``C(x, M) = g / (‖∇_x g‖₂ + ε)``
  (eq. 1); ΔC (eq. 2) is formed by the caller from these; per-head Fisher
  ``F = E ‖∇_θ_h J‖₂²`` summed over the head's parameter slices (eq. 3-4), ``I = log(F + ε)``;
  min-max normalisation; composite ``S = β·ΔC' − α·I'`` (eq. 5); the top γ by Fisher are
  protected and the top ``K = ⌊ρ·L·H⌋`` heads by S are pruned in one global step.

Heads are handled as flat vectors over every head of the model; ``HeadLayout``
(``methods/_shared/head_layout.py``) maps a flat position to its (site key, head index) and back.
"""
from __future__ import annotations

import math

import torch

from ...errors import ConfigError
from .._shared.head_layout import HeadLayout

# ----- RAHP eq. 1 -------------------------------------------------------------------------------
def margin(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``g(z) = z_c − max_{c'≠c} z_c'`` per row (positive iff the true class wins)."""
    if logits.shape[-1] < 2:
        raise ConfigError("the margin needs at least two classes")
    true = logits.gather(-1, labels.long().unsqueeze(-1)).squeeze(-1)
    others = logits.masked_fill(torch.nn.functional.one_hot(labels.long(), logits.shape[-1]).bool(), float("-inf"))
    return true - others.max(dim=-1).values


def robustness_ratio(margins: torch.Tensor, grad_norms: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``C(x, M) = g(f(x, M)) / (‖∇_x g‖₂ + ε)`` (RAHP eq. 1), elementwise."""
    return margins / (grad_norms + eps)


def per_example_norm(grad: torch.Tensor) -> torch.Tensor:
    """ℓ2 norm of each example's gradient (first dim = examples, the rest flattened)."""
    return grad.reshape(grad.shape[0], -1).norm(dim=1)


# ----- RAHP eq. 3-4 / Michel -----------------------------------------------------------------------
def head_sq_norms(grad: torch.Tensor, dim: int, head_dim: int) -> torch.Tensor:
    """Sum of squares of each head's slice of ``grad`` (heads laid out in blocks of ``head_dim``
    along ``dim``): the per-head contribution of one parameter to ``‖∇_θ_h J‖₂²``."""
    if grad.shape[dim] % head_dim:
        raise ConfigError(f"dimension {grad.shape[dim]} is not a multiple of head_dim {head_dim}")
    g = grad.movedim(dim, 0).reshape(grad.shape[dim] // head_dim, head_dim, -1)
    return g.pow(2).sum(dim=(1, 2))


def log_fisher(fisher: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``I = log(F + ε)`` (RAHP eq. 4)."""
    return torch.log(fisher + eps)


def normalize_per_layer(importance: torch.Tensor, layout: HeadLayout, exponent: float = 2.0) -> torch.Tensor:
    """Michel et al.'s layer-wise normalisation: divide each site's scores by their ℓ_p norm."""
    out = []
    for values in layout.unflatten(importance.float()).values():
        norm = values.norm(p=exponent) if values.numel() else torch.tensor(1.0)
        out.append(values / (norm + 1e-20))
    return torch.cat(out) if out else importance.float()


# ----- RAHP eq. 5 and selection ----------------------------------------------------------------
def minmax(values: torch.Tensor) -> torch.Tensor:
    """Min-max normalisation to [0, 1]; a constant vector maps to zeros."""
    values = values.float()
    lo, hi = values.min(), values.max()
    if not torch.isfinite(lo) or not torch.isfinite(hi):
        raise ConfigError("cannot normalise scores containing inf or NaN")
    if hi - lo <= 0:
        return torch.zeros_like(values)
    return (values - lo) / (hi - lo)


def composite_score(delta_c: torch.Tensor, info: torch.Tensor, alpha: float = 0.5, beta: float = 1.0) -> torch.Tensor:
    """``S = β·ΔC' − α·I'`` with both terms min-max normalised (RAHP eq. 5): high S = prune."""
    return beta * minmax(delta_c) - alpha * minmax(info)


def count_from_ratio(ratio: float, total: int) -> int:
    """``K = ⌊ρ · total⌋`` (RAHP: ``⌊ρ·L·H⌋``); ρ must lie in [0, 1]."""
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(f"pruning ratio must be in [0, 1], got {ratio}")
    return int(math.floor(ratio * total + 1e-9))


def protected_heads(fisher: torch.Tensor, gamma: float) -> torch.Tensor:
    """Bool mask of the top ``⌊γ·n⌋`` heads by Fisher score (never pruned by RAHP)."""
    if not 0.0 <= gamma <= 1.0:
        raise ConfigError(f"protected fraction gamma must be in [0, 1], got {gamma}")
    mask = torch.zeros(fisher.numel(), dtype=torch.bool)
    k = count_from_ratio(gamma, fisher.numel())
    if k:
        mask[torch.topk(fisher.float(), k, sorted=True).indices] = True
    return mask


def select_top_k(scores: torch.Tensor, k: int, exclude: torch.Tensor | None = None) -> torch.Tensor:
    """Bool mask of the ``k`` highest ``scores`` outside ``exclude`` (ties: lower index first)."""
    n = scores.numel()
    exclude = torch.zeros(n, dtype=torch.bool) if exclude is None else exclude.bool()
    available = int((~exclude).sum())
    if k < 0 or k > available:
        raise ConfigError(f"cannot select {k} heads: only {available} of {n} are selectable "
                          f"({n - available} protected)")
    masked = scores.float().masked_fill(exclude, float("-inf"))
    order = sorted(range(n), key=lambda i: (-float(masked[i]), i))
    mask = torch.zeros(n, dtype=torch.bool)
    mask[order[:k]] = True
    return mask


def select_lowest(importance: torch.Tensor, k: int, exclude: torch.Tensor | None = None) -> torch.Tensor:
    """Bool mask of the ``k`` least important heads (Michel et al.'s global pruning order)."""
    return select_top_k(-importance.float(), k, exclude)


def rahp_select(delta_c: torch.Tensor, fisher: torch.Tensor, ratio: float, alpha: float = 0.5,
                beta: float = 1.0, gamma: float = 0.1, eps: float = 1e-8) -> dict[str, torch.Tensor]:
    """RAHP Algorithm 1, selection part: returns normalised ΔC', I', S, the protected mask and the
    pruned mask (``K = ⌊ρ·n⌋`` heads with the highest S among unprotected ones)."""
    if delta_c.shape != fisher.shape:
        raise ConfigError(f"ΔC and Fisher scores differ in shape: {tuple(delta_c.shape)} vs {tuple(fisher.shape)}")
    n = fisher.numel()
    k = count_from_ratio(ratio, n)
    protected = protected_heads(fisher, gamma)
    if k > n - int(protected.sum()):
        raise ConfigError(f"ratio {ratio} asks for {k} of {n} heads but {int(protected.sum())} are protected "
                          f"(gamma {gamma}): lower ratio or gamma so that ratio + gamma <= 1")
    info = log_fisher(fisher, eps)
    score = composite_score(delta_c, info, alpha, beta)
    return {"delta_c_norm": minmax(delta_c), "info_norm": minmax(info), "score": score,
            "protected": protected, "pruned": select_top_k(score, k, protected)}
