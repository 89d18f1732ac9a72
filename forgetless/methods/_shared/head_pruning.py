"""The runner shared by the head-pruning methods (``heads``: Michel et al. 2019; ``rahp``):
bookkeeping of original head indices across prunings, physical removal (``models/surgery``), the
lifecycle stages (prepare = score and remove, recovery fine-tune, finalize = make the model's heads
equal the decision), and the JSON artifacts saved with the model. A subclass implements
``select(model, ctx)``."""
from __future__ import annotations

import copy
from abc import ABC, abstractmethod

import torch
from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.surgery import prune_heads
from ..base import CompressionContext, CompressionMethod
from .calibration import scored_train, scoring_subset
from .head_layout import HeadLayout, head_layout


class HeadPruningMethod(CompressionMethod, ABC):
    """Base: subclasses implement ``select(model, ctx)`` which prunes (``self.remove``) and fills
    ``self.record``; the stages and artifacts are shared."""

    def __init__(self, config):
        super().__init__(config)
        self.original: HeadLayout | None = None
        self.alive: dict = {}

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
        """Make the model's heads equal the decided ones (idempotent); the scores file is rewritten."""
        if self.original is None:
            return model
        model = self._match_decision(model).eval()
        if ctx is not None:
            ctx.keep_json(f"{self.config.name}-scores.json", self.artifacts())
        return model

    def _match_decision(self, model: nn.Module) -> nn.Module:
        """Remove the heads still present that the decision dropped (after a reload, say)."""
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

    def prepare(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """Score the heads and remove the chosen ones (on a copy when given the teacher itself)."""
        if model is ctx.teacher:
            model = copy.deepcopy(model)
        self.start(model)
        model = self.select(model, ctx)
        self.record["heads_before"] = self.original.total
        self.record["heads_after"] = sum(len(v) for v in self.alive.values())
        ctx.keep_json(f"{self.config.name}-scores.json", self.artifacts())
        return model

    def scoring_set(self, ctx: CompressionContext):
        return scoring_subset(scored_train(ctx), self.config.scoring_examples, ctx.seed)

    def artifacts(self) -> dict:
        """JSON-able scores, decisions and timings (saved with the model and in work_dir)."""
        if self.original is None:
            return {}
        return {"method": self.config.name, "original_layout": [[*k, n] for k, n in self.original.sites],
                "kept": [[*k, heads] for k, heads in self.alive.items()], **self.record}
