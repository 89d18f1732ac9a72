"""RAHP — Robustness-Aware Head Pruning ("Robustness-Aware Head Pruning for certified Transformer
models"), Algorithm 1, as a compression method: on a seeded scoring subset of the training set,
score every head by ΔC (eq. 1-2, per ``delta_c_mode``: ``fast_delta_c.py``) and Fisher (eq. 3-4),
protect the top γ by Fisher, prune the top ``K = ⌊ρ·L·H⌋`` unprotected heads by
``S = β·ΔC' − α·I'`` (eq. 5; the maths in ``scores.py``) in one global step (physically), then
optionally fine-tune. Decisions at other ratios (plots) reuse the same scores, exact only near this
cut. ``hybrid`` does not guarantee exact mode's pruned set (``fast_delta_c.py``; MiniLM on SST-2 at
ρ 0.4: 26 of 28); the card's note counts the pruned heads decided by first-order ΔC alone
(``first_order_only``).

Scores, protected set, decisions and scoring time are kept in ``artifacts()`` (saved with the
model) and ``work_dir/rahp-scores.json``; ``plots()`` draws the paper's Figures 2-5.
"""
from __future__ import annotations

from pathlib import Path

import torch

from .._shared.head_pruning import HeadPruningMethod
from .plots import pruned_per_layer_bars, score_heatmap
from .runner import rahp_decision, rahp_scores
from .._shared.head_layout import layout_from_json


class RobustnessAwareHeadPruning(HeadPruningMethod):
    """One-shot global head pruning by the composite robustness / Fisher score (RAHP)."""

    def select(self, model, ctx):
        cfg = self.config
        examples = self.scoring_set(ctx)
        scores = rahp_scores(model, ctx.tokenizer, examples, cfg)
        decision = rahp_decision(scores, cfg.ratio, cfg.alpha, cfg.beta, cfg.protect, cfg.eps)
        layout = layout_from_json(scores["layout"])
        self.remove(model, layout, torch.tensor(decision["pruned_mask"]))
        exact = set(range(layout.total)) if cfg.delta_c_mode == "exact" else \
            set(scores.get("hybrid", {}).get("exact_head_indices", []))
        first_order_only = sum(1 for i, pruned in enumerate(decision["pruned_mask"]) if pruned and i not in exact)
        self.record.update({"scores": scores, "decision": decision, "scoring_seconds": scores["seconds"]["total"],
                            "scoring_examples": len(examples), "first_order_only": first_order_only})
        s = scores["seconds"]
        ctx.notes.append(
            f"rahp: pruned {len(decision['pruned'])} of {layout.total} heads (ρ={cfg.ratio}, α={cfg.alpha}, "
            f"β={cfg.beta}, γ={cfg.protect}, {len(decision['protected'])} protected); scoring on {len(examples)} "
            f"training examples took {s['total']:.1f} s (ΔC {s['delta_c']:.1f} s, {cfg.delta_c_mode}"
            + (f", exact for {len(scores['hybrid']['exact_heads'])} heads near the cut" if "hybrid" in scores else "")
            + f"; Fisher {s['fisher']:.1f} s); {first_order_only} of the {len(decision['pruned'])} pruned heads were "
            f"decided by first-order ΔC alone"
            + ("" if cfg.delta_c_mode == "exact" else
               " (exact mode could prune a different set: only the heads computed exactly are guaranteed)"))
        return model

    def plots(self, out_dir) -> list[Path]:
        if "decision" not in self.record:
            return []
        out_dir = Path(out_dir)
        scores, d = self.record["scores"], self.record["decision"]
        layout = layout_from_json(scores["layout"])
        marks = {"pruned": d["pruned_mask"], "protected": d["protected_mask"]}
        paths = [
            score_heatmap(layout, d["info_norm"], out_dir / "rahp_fisher.png", "normalised Fisher I'", **marks),
            score_heatmap(layout, d["delta_c_norm"], out_dir / "rahp_delta_clever.png", "normalised ΔC'",
                          cmap="magma", **marks),
            score_heatmap(layout, d["score"], out_dir / "rahp_score.png",
                          f"composite S = {d['beta']:g}·ΔC' − {d['alpha']:g}·I'", cmap="coolwarm", **marks),
        ]
        ratios = sorted(set(self.config.plot_ratios + [self.config.ratio]))
        masks = {r: rahp_decision(scores, r, d["alpha"], d["beta"], d["gamma"], self.config.eps)["pruned_mask"]
                 for r in ratios if r + d["gamma"] <= 1.0 + 1e-9}
        paths.append(pruned_per_layer_bars(layout, masks, out_dir / "rahp_pruned_per_layer.png",
                                           "RAHP: pruned heads per layer across ratios ρ"))
        return paths
