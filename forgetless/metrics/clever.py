"""CLEVER robustness estimates (Weng et al. 2018, "Evaluating the Robustness of Neural Networks:
An Extreme Value Theory Approach"), in the input-embedding space of a text classifier.

For an example x with embeddings e and margin ``g(z) = z_c − max_{c'≠c} z_c'`` (c the true class):
draw ``batches × samples`` points uniformly in the ℓp ball of radius R around e (all real tokens'
embeddings perturbed jointly), take the maximum dual-norm gradient ``‖∇_e g‖_q`` of each batch,
fit a reverse Weibull distribution to the batch maxima and use its location as the local
Lipschitz estimate L̂ (Weng et al., Algorithm 1; where the best fit's location diverges, forgetless
falls back to another fit and says so per example and in the card: ``choose_fit``). The score is
``min(g(e)/L̂, R)`` (the estimate only holds inside the ball); the uncapped ratio is reported too.
Misclassified examples (g ≤ 0) score 0: they need no perturbation at all.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict

import numpy as np
import torch
from scipy import stats

from ..data.task import ExampleSet
from ..data.tasks import capped
from ..errors import ConfigError
from ..models.adapters import get_adapter
from ..progress import bar
from .predict import scoring_mode
from ..training.encode import TOKEN_KEYS, encode
from ..config import CleverConfig

DUAL = {"2": 2.0, "inf": 1.0}  # perturbation norm → dual norm of the gradient


# ----- pure functions ----------------------------------------------------------------------------
def fit_reverse_weibull(maxima, shape_guesses=(0.5, 2.0, 5.0, 20.0, 100.0),
                        max_excess: float = 5.0) -> dict:
    """Maximum-likelihood reverse Weibull (``scipy.stats.weibull_max``) fit of batch maxima,
    started from several shape values; as in Weng et al.'s code the fit with the best
    Kolmogorov-Smirnov p-value wins (the likelihood is unbounded for shapes < 1). Returns
    location (the estimated maximum), shape, scale, the KS-test p-value and ``fallback`` (see
    :func:`choose_fit`). Degenerate samples (all equal) return the largest maximum, ``fallback`` set."""
    x = np.asarray(maxima, dtype=np.float64)
    if x.size < 3 or not np.all(np.isfinite(x)):
        raise ConfigError("the reverse Weibull fit needs at least 3 finite batch maxima")
    top, spread = float(x.max()), float(x.max() - x.min())
    if spread <= 1e-12 * max(1.0, abs(top)):
        return {"location": top, "shape": float("inf"), "scale": 0.0, "ks_pvalue": 1.0, "fallback": True,
                "fallback_reason": "degenerate", "reference_location": None}
    candidates = []
    for c0 in shape_guesses:
        try:
            c, loc, scale = stats.weibull_max.fit(x, c0, loc=top + 0.1 * spread, scale=spread)
        except (ValueError, RuntimeError, FloatingPointError):
            continue
        if not (np.isfinite(c) and np.isfinite(loc) and scale > 0):
            continue
        pvalue = float(stats.kstest(x, "weibull_max", args=(c, loc, scale)).pvalue)
        if np.isfinite(pvalue):
            candidates.append((pvalue, float(c), float(loc), float(scale)))
    return choose_fit(candidates, top, spread, max_excess)


def choose_fit(candidates, top: float, spread: float, max_excess: float = 5.0) -> dict:
    """The fit among ``candidates`` ``(ks_pvalue, shape, location, scale)``: the best KS p-value, as
    the reference code chooses, unless that fit diverged (location more than ``max_excess`` ×
    ``spread`` above the largest maximum ``top``: no estimate). Then forgetless takes the best
    non-divergent fit, or ``top`` when every fit diverged, and marks the result ``fallback``
    (``fallback_reason`` "diverged"; ``reference_location``: the divergent location the reference
    would have used). The location is never below ``top``."""
    ranked = sorted(candidates, key=lambda f: -f[0])
    reference = ranked[0] if ranked else None
    kept = [f for f in ranked if f[2] <= top + max_excess * spread]
    diverged = reference is not None and reference not in kept
    out = {"fallback": diverged or not kept, "fallback_reason": None,
           "reference_location": reference[2] if diverged else None}
    if out["fallback"]:
        out["fallback_reason"] = "diverged" if diverged else "no fit"
    if not kept:
        return {"location": top, "shape": float("nan"), "scale": float("nan"), "ks_pvalue": float("nan"), **out}
    pvalue, c, loc, scale = kept[0]
    return {"location": max(loc, top), "shape": c, "scale": scale, "ks_pvalue": pvalue, **out}


def sample_ball(n: int, shape: tuple[int, ...], radius: float, norm: str, generator: torch.Generator) -> torch.Tensor:
    """``n`` points drawn uniformly from the ℓ2 or ℓ∞ ball of ``radius`` in ``shape``-space."""
    dim = math.prod(shape)
    if norm == "inf":
        return (torch.rand(n, dim, generator=generator) * 2 - 1).mul(radius).reshape(n, *shape)
    direction = torch.randn(n, dim, generator=generator)
    direction /= direction.norm(dim=1, keepdim=True).clamp_min(1e-20)
    r = radius * torch.rand(n, 1, generator=generator).pow(1.0 / dim)
    return (direction * r).reshape(n, *shape)


def clever_score(margin: float, lipschitz: float, radius: float) -> tuple[float, float]:
    """(capped, uncapped) score: ``min(g/L̂, R)`` and ``g/L̂``; 0 for a misclassified point."""
    if margin <= 0:
        return 0.0, 0.0
    ratio = margin / max(lipschitz, 1e-20)
    return min(ratio, radius), ratio


# ----- model glue --------------------------------------------------------------------------------
def _margin_grad(model, embeds: torch.Tensor, extra: dict, label: int, q: float):
    embeds = embeds.detach().requires_grad_(True)
    logits = get_adapter(model).logits_from_embeds(model, embeds, extra).float()
    true = logits[:, label]
    others = torch.cat([logits[:, :label], logits[:, label + 1:]], dim=1).max(dim=1).values
    g = true - others
    (grad,) = torch.autograd.grad(g.sum(), embeds)
    return g.detach(), grad.reshape(grad.shape[0], -1).norm(p=q, dim=1)


def clever_example(model, row: dict, config: CleverConfig, generator: torch.Generator) -> dict:
    """CLEVER for one encoded example (``row`` from ``training.encode``)."""
    device = next(model.parameters()).device
    ids = torch.tensor([row["input_ids"]], device=device)
    extra = {k: torch.tensor([row[k]], device=device) for k in TOKEN_KEYS if k in row and k != "input_ids"}
    label = int(row["labels"])
    q = DUAL[config.norm]
    center = model.get_input_embeddings()(ids).detach()
    g0, _ = _margin_grad(model, center, extra, label, q)
    g0 = float(g0[0])
    if g0 <= 0:
        return {"margin": g0, "lipschitz": None, "score": 0.0, "uncapped": 0.0, "fit": None, "fallback": False}
    tiled = {k: v.expand(config.samples, -1) for k, v in extra.items()}
    maxima = []
    for _ in range(config.batches):
        delta = sample_ball(config.samples, tuple(center.shape[1:]), config.radius, config.norm, generator)
        _, norms = _margin_grad(model, center + delta.to(device, center.dtype), tiled, label, q)
        maxima.append(float(norms.max()))
    fit = fit_reverse_weibull(maxima)
    score, uncapped = clever_score(g0, fit["location"], config.radius)
    return {"margin": g0, "lipschitz": fit["location"], "score": score, "uncapped": uncapped, "fit": fit,
            "fallback": fit["fallback"]}


def clever_evaluate(model, tokenizer, examples: ExampleSet, config: CleverConfig | None = None) -> dict:
    """Mean / median CLEVER score of ``model`` on a fixed seeded subset of ``examples``, with the
    parameters, timing and per-example details (margin, Lipschitz estimate, fit)."""
    config = config or CleverConfig()
    subset = capped(examples, config.examples, config.seed)  # fixed, seeded: the same for both models
    rows = encode(subset, tokenizer, config.max_length)
    generator = torch.Generator().manual_seed(config.seed)
    start = time.perf_counter()
    with scoring_mode(model, freeze=True):
        details = [clever_example(model, row, config, generator) for row in bar(rows, "CLEVER estimates")]
    return {**summarise(details), "set": examples.name, "seconds": time.perf_counter() - start,
            "params": asdict(config), "per_example": details}


def summarise(details: list[dict]) -> dict:
    """Mean / median scores of per-example results, and how many used a fallback fit
    (:func:`choose_fit`) with the mean over the examples that did not (None when all did)."""
    scores = [d["score"] for d in details]
    correct = [d for d in details if d["margin"] > 0]
    fallback = [bool(d["fit"] and d["fit"].get("fallback")) for d in details]
    kept = [s for s, f in zip(scores, fallback) if not f]
    return {
        "mean": float(np.mean(scores)),
        "median": float(statistics.median(scores)),
        "mean_correct": float(np.mean([d["score"] for d in correct])) if correct else 0.0,
        "mean_uncapped": float(np.mean([d["uncapped"] for d in details])),
        "correct": len(correct),
        "examples": len(details),
        "fallbacks": int(sum(fallback)),
        "mean_without_fallbacks": float(np.mean(kept)) if kept else None,
    }
