"""Attention-head pruning by gate-gradient importance (Michel et al. 2019, "Are Sixteen Heads
Really Better than One?"; as used in Du et al. 2023, §3.1).

Importance of head h: ``I_h = E_x |∂L(x)/∂ξ_h|`` (ξ the head gate), ℓ2-normalised per layer by
default. The lowest-scoring heads are pruned globally to ``prune_count`` heads or ``⌊ratio·n⌋``
(the paper prunes 28 of 144, about 20%), one-shot or in ``iterations`` equal steps with
re-scoring in between; the heads are physically removed, then the model is fine-tuned
(``recovery``). The runner (bookkeeping, removal, artifacts) is ``_shared/head_pruning.py``.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch
from torch import nn

from ...data.task import ExampleSet
from ...errors import ConfigError
from .._shared.calibration import scoring_batches
from .._shared.head_layout import head_layout, layout_from_json, layout_json
from .._shared.head_pruning import HeadPruningMethod
from .config import HeadsConfig
from ..rahp.model_scoring import michel_importance
from ..rahp.plots import score_heatmap
from ..rahp.scores import count_from_ratio, normalize_per_layer, select_lowest


def michel_scores(model: nn.Module, tokenizer, examples: ExampleSet, config: HeadsConfig, rows=None) -> dict:
    """Michel et al. importance per head (ℓ2-normalised per layer with ``config.layer_norm``), timed;
    ``rows``: the examples as the model kind encodes them for a label loss (default: classifier rows)."""
    batches = scoring_batches(tokenizer, examples, config.scoring_batch, config.scoring_length, rows)
    layout = head_layout(model)
    start = time.perf_counter()
    raw = michel_importance(model, batches)
    importance = normalize_per_layer(raw, layout) if config.layer_norm else raw
    return {"layout": layout_json(layout), "importance_raw": raw.tolist(), "importance": importance.tolist(),
            "scoring_examples": len(examples), "seconds": time.perf_counter() - start}


class MichelHeadPruning(HeadPruningMethod):
    """Global pruning of the least important heads (Michel et al. 2019), one-shot or iterative."""

    def select(self, model, ctx):
        cfg = self.config
        total = self.original.total
        target = cfg.prune_count if cfg.prune_count else count_from_ratio(cfg.ratio, total)
        if target > total:
            raise ConfigError(f"prune_count {target} exceeds the model's {total} heads")
        examples = self.scoring_set(ctx)
        rows = ctx.kind.scoring_rows(ctx.tokenizer, ctx.task, examples, cfg.scoring_length) if ctx.kind else None
        steps, pruned, seconds = [], [], 0.0
        for step in range(1, cfg.iterations + 1):
            goal = round(target * step / cfg.iterations)
            k = goal - len(pruned)
            if k <= 0:
                continue
            scores = michel_scores(model, ctx.tokenizer, examples, cfg, rows)
            seconds += scores["seconds"]
            layout = layout_from_json(scores["layout"])
            mask = select_lowest(torch.tensor(scores["importance"]), k)
            original = [[*key, self.alive[key][h]] for key, h in layout.entries()]
            removed = self.remove(model, layout, mask)
            pruned += removed
            steps.append({"step": step, "pruned": removed, "importance": scores["importance"],
                          "importance_raw": scores["importance_raw"], "heads": original})
        self.record.update({"target": target, "pruned": pruned, "steps": steps,
                            "scoring_seconds": seconds, "scoring_examples": len(examples)})
        ctx.notes.append(f"heads: pruned {len(pruned)} of {total} heads by Michel importance in "
                         f"{cfg.iterations} step(s); scoring {seconds:.1f} s on {len(examples)} examples")
        return model

    def plots(self, out_dir) -> list[Path]:
        if not self.record.get("steps"):
            return []
        first = self.record["steps"][0]
        pruned = {tuple(p) for p in self.record["pruned"]}
        mask = [tuple(h) in pruned for h in first["heads"]]
        return [score_heatmap(self.original, first["importance"], Path(out_dir) / "heads_importance.png",
                              "Michel importance (first scoring)", pruned=mask)]
