"""Iterative magnitude pruning during task fine-tuning (Du et al. 2023, §3.1 and appendix A;
schedule of Zhu & Gupta 2017).

Unstructured: only the linear weights inside the transformer layers are pruned (embeddings are
frozen and never pruned; biases, LayerNorms, pooler and classifier are kept). Sparsity rises along
the cubic schedule (``_shared/magnitude.py``: schedule, masks and ``MagnitudeCallback``, resumable).
Pruned weights are re-zeroed after every optimizer step, so they stay zero. Sparse weights do not make a
dense model faster: the report says so instead of claiming a speedup.
"""
from __future__ import annotations

from torch import nn

from .._shared.magnitude import CubicSchedule, MagnitudeCallback, MagnitudePruner
from ..base import CompressionContext, CompressionMethod


class MagnitudePruning(CompressionMethod):
    """prepare (freeze embeddings) → fine-tune with the schedule's callback → finalize (prune to the
    target; with ``recovery: none`` that is one-shot pruning)."""

    def prepare(self, model, ctx: CompressionContext):
        for module in _embedding_modules(model):
            module.requires_grad_(False)
        self.pruner = MagnitudePruner(model, self.config.scope)
        return model

    def callbacks(self, model, ctx):
        c = self.config
        schedule = CubicSchedule(c.sparsity, c.initial_sparsity, c.start_fraction, c.end_fraction, c.prune_every)
        self.callback = MagnitudeCallback(self.pruner, schedule)
        return [self.callback]

    def finalize(self, model, ctx):
        self.pruner.prune_to(self.config.sparsity)
        measured = self.pruner.sparsity()
        ctx.notes.append(f"magnitude pruning: measured sparsity {measured:.4f} of {len(self.pruner.linears)} "
                         f"prunable weight matrices (target {self.config.sparsity}); unstructured zeros do "
                         "not speed up dense inference, so no speedup is expected")
        for module in _embedding_modules(model):
            module.requires_grad_(True)
        return model


def _embedding_modules(model: nn.Module) -> list[nn.Module]:
    base = getattr(model, "base_model", model)
    embeddings = getattr(base, "embeddings", None)
    return [embeddings] if embeddings is not None else [model.get_input_embeddings()]
