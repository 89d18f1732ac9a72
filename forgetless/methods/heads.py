"""Attention-head pruning by gate-gradient importance (Michel et al. 2019, "Are Sixteen Heads
Really Better than One?"; as used in Du et al., §3.1), plus the shared machinery of head-pruning
methods (bookkeeping of original head indices, physical removal, CLEVER, artifacts, plots).

Importance of head h: ``I_h = E_x |∂L(x)/∂ξ_h|`` (ξ the head gate), ℓ2-normalised per layer by
default. The lowest-scoring heads are pruned globally to ``prune_count`` heads or ``⌊ratio·n⌋``
(the paper prunes 28 of 144, about 20%), one-shot or in ``iterations`` equal steps with
re-scoring in between; the heads are physically removed, then the model is fine-tuned.
"""
from __future__ import annotations

import copy
from abc import ABC, abstractmethod
import time
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..errors import ConfigError
from ..fsutil import atomic_write_json
from ..heads.model_scoring import head_layout
from ..heads.runner import layout_from_json, michel_scores, scoring_subset
from ..heads.scores import HeadLayout, count_from_ratio, select_lowest
from ..models.adapters import get_adapter
from ..models.surgery import prune_heads
from .base import METHODS, CompressionContext, CompressionMethod, check_recovery


@dataclass
class HeadPruningOptions:
    """Options shared by the head-pruning methods (``heads``, ``rahp``)."""

    ratio: float = 0.2
    scoring_examples: int = 256   # size of the seeded scoring subset of the training set
    scoring_batch: int = 32
    scoring_length: int = 64      # max tokens per scoring example
    recovery: str = "fine-tune"   # fine-tune | none (post-training: score and remove only)

    def __post_init__(self) -> None:
        check_recovery(self.recovery)
        if not 0.0 <= self.ratio <= 1.0:
            raise ConfigError(f"ratio must be in [0, 1], got {self.ratio}")
        if self.scoring_examples < 1 or self.scoring_batch < 1 or self.scoring_length < 8:
            raise ConfigError("scoring_examples >= 1, scoring_batch >= 1 and scoring_length >= 8 required")


@dataclass
class HeadsConfig(HeadPruningOptions):
    prune_count: int = 0      # exact number of heads to prune (overrides ratio when > 0)
    iterations: int = 1       # 1: one-shot; n: n equal steps, re-scoring between steps
    layer_norm: bool = True   # Michel et al.'s per-layer ℓ2 normalisation of importance

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.prune_count < 0 or self.iterations < 1:
            raise ConfigError("prune_count must be >= 0 and iterations >= 1")


class HeadPruningMethod(CompressionMethod, ABC):
    """Base: subclasses implement ``select(model, ctx)`` which prunes (``self.remove``) and fills
    ``self.record``; fine-tuning, finalize, CLEVER, artifacts and plots are shared."""

    model_kinds = ("classifier",)  # scores use a classification head's logits

    def __init__(self, config=None):
        super().__init__(config)
        self.original: HeadLayout | None = None
        self.alive: dict = {}
        self.record: dict = {}

    # ----- bookkeeping in original head indices ------------------------------------------------
    def start(self, model: nn.Module) -> None:
        if self.original is None:
            self.original = head_layout(model)
            self.alive = {key: list(range(n)) for key, n in self.original.sites}

    def remove(self, model: nn.Module, layout: HeadLayout, pruned: torch.Tensor) -> list:
        """Physically remove the heads flagged in ``pruned`` (flat over ``layout``, the model's
        current heads); returns them as [stack, layer, kind, original head]."""
        keep = layout.keep_dict(pruned)
        removed = []
        for key, kept in keep.items():
            removed += [[*key, self.alive[key][h]] for h in range(len(self.alive[key])) if h not in kept]
            self.alive[key] = [self.alive[key][h] for h in kept]
        prune_heads(model, keep)
        return removed

    def finalize(self, model: nn.Module, ctx: CompressionContext | None = None) -> nn.Module:
        """Make the model's heads equal the decided ones (idempotent)."""
        if self.original is None:
            return model
        counts = {site.key: site.num_heads for site in get_adapter(model).attention_sites(model)}
        todo = {}
        for key, n in self.original.sites:
            if counts.get(key, 0) == len(self.alive[key]):
                continue
            if counts.get(key) != n:
                raise ConfigError(f"site {key} has {counts.get(key)} heads: neither the original {n} "
                                  f"nor the decided {len(self.alive[key])}")
            todo[key] = self.alive[key]
        return prune_heads(model, todo) if todo else model

    # ----- lifecycle ---------------------------------------------------------------------------
    @abstractmethod
    def select(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """Score heads, decide which to remove (``self.alive``) and remove them."""

    def compress(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        if model is ctx.teacher:
            model = copy.deepcopy(model)
        self.start(model)
        model = self.select(model, ctx)
        self.record["heads_before"] = self.original.total
        self.record["heads_after"] = sum(len(v) for v in self.alive.values())
        atomic_write_json(ctx.work_dir / f"{self.name}-scores.json", self.artifacts())
        if self.recovers():
            model = ctx.train(model, f"train-{self.name}")
        model = self.finalize(model, ctx).eval()
        atomic_write_json(ctx.work_dir / f"{self.name}-scores.json", self.artifacts())
        return model

    def scoring_set(self, ctx: CompressionContext):
        return scoring_subset(ctx.task.train, self.config.scoring_examples, ctx.seed)

    def artifacts(self) -> dict:
        """JSON-able scores, decisions and timings (saved with the model and in work_dir)."""
        if self.original is None:
            return {}
        return {"method": self.name, "original_layout": [[*k, n] for k, n in self.original.sites],
                "kept": [[*k, heads] for k, heads in self.alive.items()], **self.record}


@METHODS.register("heads", HeadsConfig)
class MichelHeadPruning(HeadPruningMethod):
    """Global pruning of the least important heads (Michel et al. 2019), one-shot or iterative."""

    name = "heads"

    def select(self, model, ctx):
        cfg = self.config
        total = self.original.total
        target = cfg.prune_count if cfg.prune_count else count_from_ratio(cfg.ratio, total)
        if target > total:
            raise ConfigError(f"prune_count {target} exceeds the model's {total} heads")
        examples = self.scoring_set(ctx)
        steps, pruned, seconds = [], [], 0.0
        for step in range(1, cfg.iterations + 1):
            goal = round(target * step / cfg.iterations)
            k = goal - len(pruned)
            if k <= 0:
                continue
            start = time.perf_counter()
            scores = michel_scores(model, ctx.tokenizer, examples, cfg.scoring_batch, cfg.scoring_length,
                                   cfg.layer_norm)
            seconds += time.perf_counter() - start
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
        from ..heads.plots import score_heatmap

        if not self.record.get("steps"):
            return []
        first = self.record["steps"][0]
        pruned = {tuple(p) for p in self.record["pruned"]}
        mask = [tuple(h) in pruned for h in first["heads"]]
        return [score_heatmap(self.original, first["importance"], Path(out_dir) / "heads_importance.png",
                              "Michel importance (first scoring)", pruned=mask)]
