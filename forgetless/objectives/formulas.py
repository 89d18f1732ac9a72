"""Pure tensor math of the robust-distillation objectives (Du et al., "What do Compressed Large
Language Models Forget? Robustness Challenges in Model Compression", §5 and appendix B): task-specific
distillation (Sanh et al. 2020), the instance-level smoothing of eq. 3 (Smooth, RMC), the focal and
re-weighted losses of appendix B (Lin et al. 2017) and the JTT weights (Liu et al. 2021). Every
function takes tensors and returns tensors, tested on small hand-computed values
(``tests/objectives/test_objectives_math.py``).
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

_TINY = 1e-12


def weighted_ce(logits: torch.Tensor, labels: torch.Tensor, weights: torch.Tensor | None = None) -> torch.Tensor:
    """Mean over the batch of ``w_i · CE(y_i, softmax(logits_i))``; ``weights=None`` is plain CE."""
    per_sample = F.cross_entropy(logits, labels, reduction="none")
    if weights is None:
        return per_sample.mean()
    return (weights.to(per_sample.dtype) * per_sample).mean()


def kl_teacher_student(student_logits: torch.Tensor, teacher_probs: torch.Tensor,
                       temperature: float = 1.0) -> torch.Tensor:
    """Per-sample ``KL(p_T ‖ p_S) = Σ_j p_T,j (log p_T,j − log p_S,j)``, with ``p_S`` the softmax of
    the student's logits at ``temperature``; terms with ``p_T,j = 0`` contribute 0."""
    log_ps = F.log_softmax(student_logits / temperature, dim=-1)
    pt = teacher_probs.to(log_ps.dtype)
    log_pt = torch.log(pt.clamp_min(_TINY))
    return torch.where(pt > 0, pt * (log_pt - log_ps), torch.zeros_like(pt)).sum(dim=-1)


def kd_loss(student_logits: torch.Tensor, labels: torch.Tensor, teacher_probs: torch.Tensor,
            lam: float = 0.9, temperature: float = 1.0) -> torch.Tensor:
    """Distillation loss ``(1 − λ)·CE(y, p_S) + λ·T²·KL(p_T ‖ p_S)`` averaged over the batch.

    With T = 1 (the paper's setting) this is eq. 4 of Du et al. when ``teacher_probs`` are the
    smoothed probabilities ``s_i`` of eq. 3, and the Distil baseline when they are the raw ``p_T``.
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got {lam}")
    ce = F.cross_entropy(student_logits, labels)
    kl = kl_teacher_student(student_logits, teacher_probs, temperature).mean()
    return (1.0 - lam) * ce + lam * (temperature ** 2) * kl


def smooth_probs(probs: torch.Tensor, degree: torch.Tensor | float) -> torch.Tensor:
    """Eq. 3 of Du et al.: ``s_ij = p_ij^{d_i} / Σ_k p_ik^{d_i}``.

    ``degree`` is one exponent for all rows (float or 0-d tensor) or one per row (shape ``(N,)``).
    ``d = 1`` returns ``probs`` unchanged; ``d < 1`` flattens towards uniform (``d = 0`` gives the
    uniform distribution); ``d > 1`` sharpens. Computed in log space for stability.
    """
    degree = torch.as_tensor(degree, dtype=probs.dtype, device=probs.device)
    if degree.dim() == 1:
        degree = degree.unsqueeze(-1)
    elif degree.dim() > 1:
        raise ValueError(f"degree must be a scalar or one value per row, got shape {tuple(degree.shape)}")
    if torch.any(degree < 0):
        raise ValueError("smoothing degree must be >= 0")
    return torch.softmax(degree * torch.log(probs.clamp_min(_TINY)), dim=-1)


def focal_weights(true_class_probs: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    """Appendix B of Du et al.: ``w_i = (1 − p_i)^γ / mean_batch((1 − p_k)^γ)``, mean 1 in the batch.

    ``p_i`` is the model's probability of the gold class. A batch where every ``p_i = 1`` (all
    weights 0/0) gets weight 1 everywhere, i.e. plain CE.
    """
    raw = (1.0 - true_class_probs).clamp_min(0.0) ** gamma
    mean = raw.mean()
    if mean <= _TINY:
        return torch.ones_like(raw)
    return raw / mean


def focal_loss(logits: torch.Tensor, labels: torch.Tensor, gamma: float = 2.0, detached: bool = False) -> torch.Tensor:
    """Du et al. appendix B focal loss ``mean_i(−(1 − p_i)^γ / mean_batch((1 − p_k)^γ) · log p_i)``,
    differentiated as written: the gradient flows through ``(1 − p_i)^γ`` and the batch normaliser
    as well as through ``log p_i`` (Lin et al. 2017's focal loss, batch-normalised); ``detached``: the
    weights ``w_i`` are not differentiated (``reweighted_ce_loss``)."""
    log_p = F.log_softmax(logits, dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    weights = focal_weights((log_p.detach() if detached else log_p).exp(), gamma)
    return -(weights * log_p).mean()


def reweighted_ce_loss(logits: torch.Tensor, labels: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    """The value of :func:`focal_loss` with the weights ``w_i`` *detached*: per-sample CE
    re-weighted by the current ``(1 − p_i)^γ`` (a sample re-weighting method). Its gradient is
    not the focal loss's (on random logits they differ by tens of percent)."""
    return focal_loss(logits, labels, gamma, detached=True)


def jtt_weights(misclassified: torch.Tensor, lambda_up: float = 2.0) -> torch.Tensor:
    """JTT: weight ``λ_up`` for samples the first model got wrong, 1 otherwise, divided by the mean
    so the average weight over the training set is 1."""
    if lambda_up <= 0:
        raise ValueError(f"lambda_up must be > 0, got {lambda_up}")
    raw = 1.0 + (lambda_up - 1.0) * misclassified.to(torch.float64)
    return (raw / raw.mean()).to(torch.float32)
