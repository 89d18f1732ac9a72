"""NASH (Ko et al. 2023) registered as a compression method; the algorithm lives in
``forgetless.seq2seq`` (``nash.py``: recipe, ``trainer.py``: objective §4.3). Needs a seq2seq task
(``forgetless.seq2seq.data``); ``forgetless.seq2seq.pipeline.run_compress`` is the full run."""
from __future__ import annotations

import math

from ..errors import ConfigError
from ..seq2seq.data import Seq2SeqTask
from ..seq2seq.nash import Nash, NashConfig
from ..seq2seq.trainer import Seq2SeqTrainConfig, train_seq2seq
from .base import METHODS, CompressionMethod


class Seq2SeqPruning(CompressionMethod):
    """prepare (layer selection + L0 masks) → distillation with the Lagrangian → finalize
    (physical removal) → fine-tune, all through the seq2seq ``Trainer`` subclass."""

    recipe_cls = Nash

    def compress(self, model, ctx):
        if not isinstance(ctx.task, Seq2SeqTask):
            raise ConfigError(f"{self.name} compresses encoder-decoder models on a seq2seq task (synthetic, "
                              "tweetqa, samsum, xsum); see forgetless.seq2seq.pipeline.run_compress")
        recipe = self.recipe_cls(self.config)
        tc = ctx.train_config

        def config(epochs: float) -> Seq2SeqTrainConfig:
            return Seq2SeqTrainConfig(epochs=epochs, learning_rate=tc.learning_rate, batch_size=tc.batch_size,
                                      max_source_length=tc.max_length, seed=ctx.seed)

        student = recipe.prepare(model)
        steps = math.ceil(len(ctx.task.train) / tc.batch_size) * self.config.prune_epochs
        student = train_seq2seq(student, ctx.tokenizer, ctx.task.train, ctx.work_dir / f"{self.name}-prune",
                                config(self.config.prune_epochs), teacher=ctx.teacher, spec=recipe.spec(int(steps)))
        student = recipe.finalize(student)
        if self.config.finetune_epochs > 0:
            student = train_seq2seq(student, ctx.tokenizer, ctx.task.train, ctx.work_dir / f"{self.name}-finetune",
                                    config(self.config.finetune_epochs), teacher=ctx.teacher,
                                    spec=recipe.spec(0, with_masks=False))
        ctx.notes.append(f"{self.name}: kept layers {recipe.layers}, target sparsity {recipe.target:.2f}, "
                         f"achieved {getattr(recipe, 'achieved_sparsity', 0.0):.3f}")
        return student


@METHODS.register("nash", NashConfig)
class NashMethod(Seq2SeqPruning):
    name = "nash"
    recipe_cls = Nash
