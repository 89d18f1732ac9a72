"""RAHP's scoring run and decision: ``rahp_scores`` runs Algorithm 1's scoring part (ΔC per head,
eq. 1-2, exact, first-order or hybrid — see ``fast_delta_c``; Fisher per head, eq. 3-4) and returns
a JSON-able dict with the scores in flat head order, the layout and the scoring time;
``rahp_decision`` applies eq. 5, the protected set and the top-K cut to stored scores.
"""
from __future__ import annotations

import time

import torch
from torch import nn

from ...data.task import ExampleSet
from .._shared.calibration import scoring_batches
from .config import RahpConfig
from .fast_delta_c import first_order_delta_c_scores, hybrid_delta_c
from .._shared.head_layout import head_layout, layout_from_json, layout_json
from .model_scoring import delta_c_scores, fisher_scores
from .scores import rahp_select


def rahp_scores(model: nn.Module, tokenizer, examples: ExampleSet, config: RahpConfig) -> dict:
    """ΔC (RAHP eq. 2) and Fisher (eq. 3) per head on ``examples``, timed, with ``config``'s scoring
    options: ``delta_c_mode`` ``exact`` (one masked pass per head, baseline C reused), ``first-order``
    (``−∂C/∂ξ_h`` by double backward) or ``hybrid`` (first-order, then exact near the cut of the
    selection at ``ratio`` / ``alpha`` / ``beta`` / ``protect``); see ``fast_delta_c``."""
    c = config
    batches = scoring_batches(tokenizer, examples, c.scoring_batch, c.scoring_length)
    layout = head_layout(model)
    start = time.perf_counter()
    fisher = fisher_scores(model, batches)
    t_fisher = time.perf_counter() - start
    seconds: dict[str, float] = {}
    extra: dict = {}
    start = time.perf_counter()
    if c.delta_c_mode == "exact":
        delta_c, baseline = delta_c_scores(model, batches, eps=c.eps, rows_per_pass=c.rows_per_pass)
        exact_heads = list(range(layout.total))
        seconds["delta_c_exact"] = time.perf_counter() - start
    else:
        first_order, baseline = first_order_delta_c_scores(model, batches, c.eps)
        seconds["delta_c_first_order"] = time.perf_counter() - start
        delta_c, exact_heads = first_order, []
        extra["delta_c_first_order"] = first_order.tolist()
        if c.delta_c_mode == "hybrid":
            mid = time.perf_counter()
            hybrid = hybrid_delta_c(model, batches, fisher, c.ratio, c.alpha, c.beta, c.protect, c.hybrid_window, c.eps,
                                    c.rows_per_pass, first_order=first_order, extremes=c.hybrid_extremes)
            seconds["delta_c_exact"] = time.perf_counter() - mid
            delta_c, exact_heads = hybrid["delta_c"], sorted(hybrid["exact"])
            entries = layout.entries()
            extra["hybrid"] = {"ratio": c.ratio, "alpha": c.alpha, "beta": c.beta, "gamma": c.protect,
                               "window": c.hybrid_window, "extremes": c.hybrid_extremes,
                               "iterations": hybrid["iterations"], "exact_head_indices": exact_heads,
                               "exact_heads": [[*entries[i][0], entries[i][1]] for i in exact_heads]}
    t_delta = time.perf_counter() - start
    seconds.update({"delta_c": t_delta, "fisher": t_fisher, "total": t_delta + t_fisher})
    return {
        "layout": layout_json(layout),
        "delta_c": delta_c.tolist(),
        "fisher": fisher.tolist(),
        "delta_c_mode": c.delta_c_mode,
        "baseline_c_mean": float(baseline.mean()),
        "scoring_examples": len(examples),
        "seconds": seconds,
        "masked_passes": len(exact_heads) * len(examples),
        **extra,
    }


def rahp_decision(scores: dict, ratio: float, alpha: float, beta: float, gamma: float, eps: float = 1e-8) -> dict:
    """Apply RAHP's selection (eq. 5, protection, top-K) to stored scores; JSON-able."""
    layout = layout_from_json(scores["layout"])
    picked = rahp_select(torch.tensor(scores["delta_c"]), torch.tensor(scores["fisher"]), ratio,
                         alpha, beta, gamma, eps)
    return {
        "ratio": ratio, "alpha": alpha, "beta": beta, "gamma": gamma,
        "delta_c_norm": picked["delta_c_norm"].tolist(), "info_norm": picked["info_norm"].tolist(),
        "score": picked["score"].tolist(),
        "protected": [[*key, h] for (key, h), p in zip(layout.entries(), picked["protected"]) if p],
        "pruned": [[*key, h] for (key, h), p in zip(layout.entries(), picked["pruned"]) if p],
        "pruned_mask": picked["pruned"].tolist(), "protected_mask": picked["protected"].tolist(),
    }
