"""Layer removal by Block Influence (ShortGPT, Men et al. 2024): score every layer of a stack by
BI on a seeded calibration subset of the training set (``influence.py``), remove the lowest-BI
layers physically, then fine-tune (``recovery``)."""
from __future__ import annotations

from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.surgery import drop_layers
from .._shared.calibration import scored_train, scoring_batches, scoring_subset
from ..base import CompressionContext, CompressionMethod
from .influence import layer_block_influence, lowest_influence


class BlockInfluenceRemoval(CompressionMethod):
    """Score layers by Block Influence on calibration text, remove the lowest, fine-tune."""

    def prepare(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        cfg = self.config
        stacks = get_adapter(model).stacks(model)
        stack = cfg.stack or next(iter(stacks))
        if stack not in stacks:
            raise ConfigError(f"block-influence: stack {stack!r} does not exist; stacks: {', '.join(stacks)}")
        total = len(stacks[stack])
        count = cfg.removed_count(total)
        examples = scoring_subset(scored_train(ctx), cfg.calibration_examples, ctx.seed)
        batches = scoring_batches(ctx.tokenizer, examples, cfg.calibration_batch, cfg.calibration_length)
        scores = layer_block_influence(model, batches, stack)
        removed = lowest_influence(scores, count)
        keep = [i for i in range(total) if i not in removed]
        drop_layers(model, stack, keep)
        self.record = {"method": self.config.name, "stack": stack, "block_influence": scores, "removed": removed,
                       "kept": keep, "calibration_examples": len(examples), "seed": ctx.seed}
        ctx.keep_json(f"{self.config.name}-scores.json", self.record)
        ctx.notes.append(f"block-influence: BI per {stack} layer {[round(s, 4) for s in scores]} on "
                         f"{len(examples)} calibration examples; removed layers {removed} of {total}"
                         + (", then fine-tuned" if self.config.recovers else ", no recovery training"))
        return model
