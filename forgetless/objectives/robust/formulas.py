"""Pure tensor math of the robust fine-tuning baselines of RAHP's Table 1 (R-Drop, SMART, FreeLB,
Child-Tuning_D, ROSE). Nothing here knows about models, data or the Trainer; the glue lives in
``rdrop.py``, ``smart.py``, ``freelb.py``, ``child_tuning.py`` and ``rose.py`` (``glue.py``: model
and Trainer helpers), and every formula
is tested on hand-computed values (``tests/objectives/test_robust_objectives.py``).
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

_TINY = 1e-12


# ----- divergences ------------------------------------------------------------------------------
def symmetric_kl(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """Per-row ``KL(P‖Q) + KL(Q‖P)`` of the softmax distributions of two logit tensors ``(B, C)``.

    This is SMART's ``ℓ_s`` for classification (Jiang et al. 2020, "SMART", eq. 2 and §3.1) and twice
    R-Drop's ``L_KL`` (Wu et al. 2021, eq. 2). Gradients flow through both arguments."""
    log_p = F.log_softmax(logits_p.float(), dim=-1)
    log_q = F.log_softmax(logits_q.float(), dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(-1) + (log_q.exp() * (log_q - log_p)).sum(-1)


def rdrop_loss(logits_1: torch.Tensor, logits_2: torch.Tensor, labels: torch.Tensor,
               kl_weight: float, reduction: str = "sum") -> torch.Tensor:
    """R-Drop (Wu et al. 2021, "R-Drop: Regularized Dropout for Neural Networks", eq. 3),
    ``CE1 + CE2 + α/2 · (KL(P1‖P2) + KL(P2‖P1))`` with P1, P2 the predictions of two forward passes
    under different dropout masks, reduced over the batch in one of two ways:

    * ``"sum"`` (the authors' GLUE code, ``huggingface_transformer_src`` ``bert_kl``): batch
      means of the cross-entropies, the KL *summed* over the batch,
      ``mean(CE1) + mean(CE2) + α/2 · Σ_i (KL(P1‖P2) + KL(P2‖P1))`` (their code's constant 0.5 is α);
      the paper's tuned α (0.1-1.0) is an α of this loss;
    * ``"mean"`` (eq. 3 averaged per example): ``mean_i[CE1 + CE2 + α/2 · (KL(P1‖P2) + KL(P2‖P1))]``,
      whose KL is B times weaker than ``"sum"`` for the same α (B the batch size).

    The README snippet of the authors, ``½(CE1 + CE2) + α′/2 · Σ_i symKL``, is ½ × ``"sum"`` with
    α′ = α/2."""
    ce = F.cross_entropy(logits_1, labels, reduction="none") + F.cross_entropy(logits_2, labels, reduction="none")
    sym = symmetric_kl(logits_1, logits_2)
    if reduction == "sum":
        return ce.mean() + 0.5 * kl_weight * sym.sum()
    if reduction == "mean":
        return (ce + 0.5 * kl_weight * sym).mean()
    raise ValueError(f"R-Drop reduction must be 'sum' or 'mean', got {reduction!r}")


def symmetric_kl_one_side(logits_p: torch.Tensor, logits_q: torch.Tensor) -> torch.Tensor:
    """Per-row ``KL(P‖Q) + KL(Q‖P)`` with the *target* side of each direction detached, as MT-DNN's
    ``SymKlCriterion`` (SMART's reference code): the value equals :func:`symmetric_kl`, but the
    gradient of ``KL(P‖Q)`` flows through Q only and that of ``KL(Q‖P)`` through P only."""
    log_p = F.log_softmax(logits_p.float(), dim=-1)
    log_q = F.log_softmax(logits_q.float(), dim=-1)
    p, q = log_p.exp().detach(), log_q.exp().detach()
    return (p * (log_p.detach() - log_q)).sum(-1) + (q * (log_q.detach() - log_p)).sum(-1)


STABLE_KL_EPSILON = 1e-6  # MT-DNN loss.py stable_kl's default


def stable_kl_sum(logits: torch.Tensor, target: torch.Tensor, epsilon: float = STABLE_KL_EPSILON) -> torch.Tensor:
    """MT-DNN's ``stable_kl(logits, target, reduce=False)``, the loss SMART's reference code ascends
    to find the perturbation: ``Σ_i Σ_c 2·p_ic·(r(p_ic) − r(y_ic))`` summed over the batch, with
    ``p = softmax(logits)``, ``y = softmax(target)`` and the detached log-odds
    ``r(x) = −log(1/(x + ε) − 1 + ε)``; gradients flow through ``p`` only."""
    p = F.softmax(logits.float(), dim=-1)
    y = F.softmax(target.float(), dim=-1)
    log_odds = lambda x: -torch.log(1.0 / (x + epsilon) - 1.0 + epsilon).detach()  # noqa: E731
    return (2.0 * p * (log_odds(p) - log_odds(y))).sum()


def mtdnn_step(noise: torch.Tensor, grad: torch.Tensor, step_size: float, stabiliser: float) -> torch.Tensor:
    """One ascent step of SMART's reference code (MT-DNN ``SmartPerturbation``, ``norm_p='inf'``,
    token level): ``ν ← (ν + η·g) / (max_h |ν + η·g| + ε)``, the maximum over the hidden dimension
    of each token. There is no projection onto an ε-ball: every token's perturbation ends with an
    ℓ∞ norm of about 1, and ε only keeps the division finite."""
    moved = noise + step_size * grad
    return moved / (moved.abs().amax(dim=-1, keepdim=True) + stabiliser)


# ----- embedding perturbations (SMART, FreeLB) --------------------------------------------------
def _per_example(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(x.shape[0], -1)


def _expand(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1, *([1] * (like.dim() - 1)))


def project_linf(delta: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Projection onto the ℓ∞ ball ``‖δ‖∞ ≤ ε`` (SMART, Algorithm 1, the ``Π`` step): clamp each entry."""
    return delta.clamp(-epsilon, epsilon)


def project_l2(delta: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Projection of each example's perturbation onto the Frobenius ball ``‖δ_i‖_F ≤ ε`` (FreeLB,
    Zhu et al. 2020, Algorithm 1 line 9, ``Π_{‖δ‖_F ≤ ε}``); ``ε = 0`` gives δ = 0."""
    if epsilon <= 0:
        return torch.zeros_like(delta)
    norms = _per_example(delta).norm(dim=1)
    scale = torch.where(norms > epsilon, epsilon / norms.clamp_min(_TINY), torch.ones_like(norms))
    return delta * _expand(scale, delta)


def normalize_linf(grad: torch.Tensor) -> torch.Tensor:
    """SMART's ascent direction ``g̃_i = g_i / ‖g_i‖∞`` per example (Jiang et al. 2020, Algorithm 1)."""
    norms = _per_example(grad).abs().amax(dim=1).clamp_min(_TINY)
    return grad / _expand(norms, grad)


def normalize_l2(grad: torch.Tensor) -> torch.Tensor:
    """FreeLB's ascent direction ``g_adv / ‖g_adv‖_F`` per example (Zhu et al. 2020, Algorithm 1 line 8)."""
    norms = _per_example(grad).norm(dim=1).clamp_min(_TINY)
    return grad / _expand(norms, grad)


def freelb_init(shape: tuple[int, ...], token_mask: torch.Tensor, init_magnitude: float,
                generator: torch.Generator | None = None) -> torch.Tensor:
    """FreeLB's initial perturbation (Zhu et al. 2020, Algorithm 1 line 4): ``δ_0 = U(−σ, σ)/√N_δ``
    on the real tokens of each example (``N_δ`` = number of its real tokens × hidden size), zero on
    padding; ``σ = 0`` gives δ_0 = 0."""
    mask = token_mask.to(torch.float32).unsqueeze(-1)
    if init_magnitude <= 0:
        return torch.zeros(shape, device=token_mask.device)
    uniform = torch.rand(shape, generator=generator, device=token_mask.device) * 2 - 1
    dims = mask.sum(dim=(1, 2)) * shape[-1]
    return uniform * mask * _expand(init_magnitude / dims.clamp_min(1).sqrt(), uniform)


# ----- Bregman proximal point (SMART) -----------------------------------------------------------
@torch.no_grad()
def ema_update(average: list[torch.Tensor], current: list[torch.Tensor], momentum: float) -> None:
    """SMART's momentum update of the proximal anchor (Jiang et al. 2020, Algorithm 1, last line):
    ``θ̃_t = (1 − β)·θ_t + β·θ̃_{t−1}``, in place on ``average``."""
    for avg, cur in zip(average, current):
        avg.mul_(momentum).add_(cur.detach().to(avg.dtype), alpha=1.0 - momentum)


# ----- selection masks (Child-Tuning_D, ROSE) ---------------------------------------------------
def top_share_masks(scores: list[torch.Tensor], keep_share: float) -> list[torch.Tensor]:
    """Boolean masks keeping the ``round(keep_share · N)`` highest scores over all tensors together
    (``N`` = total entries); ties broken by position. Child-Tuning_D's child network is the top
    share of the Fisher information (Xu et al. 2021, "Raise a Child in Large Language Model", §3.2)."""
    flat = torch.cat([s.detach().reshape(-1).float().cpu() for s in scores])
    keep = int(round(keep_share * flat.numel()))
    chosen = torch.zeros(flat.numel(), dtype=torch.bool)
    if keep > 0:
        chosen[torch.topk(flat, keep, sorted=False).indices] = True
    out, start = [], 0
    for s in scores:
        out.append(chosen[start:start + s.numel()].reshape(s.shape).to(s.device))
        start += s.numel()
    return out


def clip_tensor_norm(grad: torch.Tensor, max_norm: float | None) -> torch.Tensor:
    """``grad`` scaled to ℓ2 norm at most ``max_norm`` (``torch.nn.utils.clip_grad_norm_`` on one
    tensor: factor ``min(1, max_norm / (‖grad‖ + 1e-6))``); ``None`` or ≤ 0: unchanged. Child-Tuning's
    reference code clips every parameter tensor's gradient this way in its Fisher pass."""
    if max_norm is None or max_norm <= 0:
        return grad
    return grad * (max_norm / (grad.norm() + 1e-6)).clamp(max=1.0)


def fisher_information(squared_grad_sums: list[torch.Tensor], batches: int) -> list[torch.Tensor]:
    """Empirical Fisher information per parameter, ``F(w) = 1/|D| Σ_j (∂ log p(y_j|x_j) / ∂w)²``
    (Xu et al. 2021, eq. 4), estimated like the paper's code from mini-batch gradients: the sum of
    squared batch-mean gradients divided by the number of batches."""
    return [s / max(batches, 1) for s in squared_grad_sums]


def interval_rank_mask(risk: torch.Tensor, lower_quantile: float, upper_quantile: float) -> torch.Tensor:
    """ROSE's selection (Jiang et al. 2022, "ROSE: Robust Selective Fine-tuning", §3): keep the
    entries whose risk lies between the ``lower`` and ``upper`` quantiles, i.e. drop the least
    valuable (below) and the least robust (above). Computed on ranks so the kept count is exact:
    ranks ``[floor(l·n), floor(u·n))`` in ascending risk are kept (ties by position)."""
    n = risk.numel()
    order = torch.argsort(risk.detach().reshape(-1).float().cpu(), stable=True)
    lo, hi = int(lower_quantile * n), int(upper_quantile * n)
    mask = torch.zeros(n, dtype=torch.float32)
    mask[order[lo:hi]] = 1.0
    return mask.reshape(risk.shape).to(risk.device)


def quantile_interval_mask(risk: torch.Tensor, lower_quantile: float, upper_quantile: float) -> torch.Tensor:
    """ROSE's selection as its reference code computes it: keep the entries with
    ``quantile(risk, l) ≤ risk ≤ quantile(risk, u)`` (``torch.quantile``, linear interpolation, both
    ends inclusive). The kept count can differ by one from :func:`interval_rank_mask` (risk 0…15,
    l = 0.55, u = 0.95: the quantiles are 8.25 and 14.25, so 9…14 are kept; ranks keep 8…14)."""
    values = risk.detach().reshape(-1).float().cpu()
    lo, hi = torch.quantile(values, lower_quantile), torch.quantile(values, upper_quantile)
    return ((values >= lo) & (values <= hi)).float().reshape(risk.shape).to(risk.device)


ROSE_SELECTIONS = {"quantile": quantile_interval_mask, "rank": interval_rank_mask}


def second_order_risk(grad_norms: torch.Tensor, momentum_norms: torch.Tensor, beta1: float) -> torch.Tensor:
    """ROSE-Second's risk per parameter tensor: ``|(1 − β1)·‖g_t‖ / ‖m_{t−1}‖ − 1|``, the relative
    size of the current gradient's contribution to Adam's first moment ``m`` against the moment
    itself (the reference implementation's ``|0.1·‖g‖/‖m‖ − 1|`` with β1 = 0.9)."""
    return ((1.0 - beta1) * grad_norms / momentum_norms.clamp_min(_TINY) - 1.0).abs()


def ensemble_mask(first_order: torch.Tensor, second_order: torch.Tensor, first_order_weight: float) -> torch.Tensor:
    """ROSE-Ensemble: ``M = γ·M_first + (1 − γ)·M_second``, a soft mask in ``{0, γ, 1 − γ, 1}`` that
    scales each tensor's update (reference implementation, γ = 0.5 by default)."""
    return first_order_weight * first_order + (1.0 - first_order_weight) * second_order


@torch.no_grad()
def apply_update_mask(before: torch.Tensor, after: torch.Tensor, mask: torch.Tensor | float) -> torch.Tensor:
    """``θ_{t+1} = θ_t + M ⊙ Δθ_t`` with ``Δθ_t = after − before`` the optimizer's update (ROSE's
    selective update; M = 0 freezes, M = 1 keeps the full update)."""
    return before + mask * (after - before)
