"""NASH (Ko et al. 2023, "A Simple Unified Framework of Structured Pruning for Accelerating
Encoder-Decoder Language Models") and the CoFi-style baseline it compares with (Xia et al. 2022),
as ordinary compression methods for encoder-decoder models.

NASH (§4): a *shallow decoder* — keep d_s decoder layers (§4.1's uniform selection = the
``stride`` strategy of ``_shared/layer_selection``; Table 3's low / high = ``first`` / ``last``),
initialised from the teacher's layers — and a *narrow encoder* — hard-concrete L0 masks on every
encoder head and FFN unit, trained with the Lagrangian term to the target encoder sparsity (§4.2,
appendix B; Table 4's alternatives: no encoder pruning, or dropping encoder layers too). Training
uses the run's objective (default ``nash-distil``: KL + λ_enc L_h^enc + λ_dec L_h^dec, §4.3, each
kept decoder layer distilled from the teacher layer it was copied from, via ``ctx.layer_map``) plus
the Lagrangian regulariser. ``finalize`` turns the learned masks into deterministic masks that
reach the target exactly and removes the units; the pruned model is then fine-tuned
(``finetune_epochs``, same objective, no regulariser).

CoFi-style baseline: no layer selection; L0 masks on heads, FFN units and whole attention / FFN
sub-layers in encoder *and* decoder, one sparsity target over all of them; hidden-state
distillation layer ℓ → layer ℓ (CoFi's dynamic layer matching is not reproduced).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import math
from dataclasses import replace

import torch
from torch import nn

from ...errors import ConfigError, UnsupportedModelError
from ...models import surgery
from ...models.adapters import get_adapter
from .._shared.layer_selection import select_layers
from ..base import CompressionContext, CompressionMethod
from .l0_masks import L0Masks, LagrangianRegularizer

PROBE_EXAMPLES = 8


class L0Pruning(CompressionMethod, ABC):
    """prepare (layer choice + L0 masks, ``cut``) → training stage (``recover``: train with the
    Lagrangian regulariser, then ``finalize``: deterministic masks, physical removal, masked ==
    sliced check, then fine-tune ``finetune_epochs``) → ``finalize`` (idempotent: nothing left)."""

    def __init__(self, config):
        super().__init__(config)
        self.target = 0.0
        self.layers: dict[str, list[int]] = {}

    def require_seq2seq(self, model: nn.Module) -> None:
        if not get_adapter(model).is_seq2seq:
            raise UnsupportedModelError(f"{self.config.name} prunes encoder-decoder models (T5, BART, bert2bert), "
                                        f"got {type(model).__name__}")

    @abstractmethod
    def cut(self, model: nn.Module) -> nn.Module:
        """Choose the kept layers (``self.layers``), drop the others, install the L0 masks."""

    def add_masks(self, model: nn.Module, stacks: tuple[str, ...], layer_masks: bool) -> None:
        model.l0_masks = L0Masks(model, stacks, layer_masks=layer_masks, init_log_alpha=self.config.init_log_alpha,
                                 target=self.target).install(model)

    def prepare(self, model: nn.Module, ctx: CompressionContext | None) -> nn.Module:
        self.require_seq2seq(model)
        model = self.cut(model)
        if ctx is not None:
            ctx.layer_map = self.layers  # hidden-state distillation: teacher layer of each kept layer
        return model

    def recover(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """Learn the masks (Lagrangian regulariser), remove the units, fine-tune the pruned model."""
        masks = getattr(model, "l0_masks", None)
        regularizer = None
        if masks is not None:
            tc = ctx.train_config
            steps = tc.max_steps if tc.max_steps > 0 else math.ceil(len(ctx.task.train) / tc.batch_size) * tc.epochs
            regularizer = LagrangianRegularizer(masks, self.target, int(self.config.sparsity_warmup * steps),
                                                self.config.l0_learning_rate)
        model = ctx.train(model, f"train-{self.config.name}-prune", regularizer=regularizer)
        model = self.finalize(model, ctx)
        if self.config.finetune_epochs > 0:
            config = replace(ctx.train_config, epochs=self.config.finetune_epochs, max_steps=-1)
            model = ctx.train(model, f"train-{self.config.name}-finetune", config=config)
        ctx.notes.append(f"{self.config.name}: kept layers {self.layers}, target sparsity {self.target:.2f}, "
                         f"achieved {self.record.get('achieved_sparsity', 0.0):.3f}; greedy generation masked == "
                         f"sliced on {PROBE_EXAMPLES} training sources: {self.record.get('masked_equals_sliced')}")
        return model

    @torch.no_grad()
    def finalize(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """Deterministic masks reaching the target → fold and slice; returns a plain model."""
        masks = getattr(model, "l0_masks", None)
        if masks is None:
            self.record.setdefault("achieved_sparsity", 0.0)
            return model
        probe = ctx.probe_inputs(PROBE_EXAMPLES)
        model.eval()
        masked = model.generate(**probe, max_new_tokens=8, do_sample=False) if probe else None
        values = masks.deterministic(self.target)
        self.record["achieved_sparsity"] = masks.sparsity_of(values)
        masks.finalize(model, values)
        del model.l0_masks
        if probe:
            sliced = model.generate(**probe, max_new_tokens=8, do_sample=False)
            self.record["masked_equals_sliced"] = bool(masked.shape == sliced.shape and torch.equal(masked, sliced))
        return model

    def artifacts(self) -> dict:
        return {"kept_layers": self.layers, "target_sparsity": self.target, **self.record}


class Nash(L0Pruning):
    def cut(self, model):
        c = self.config
        stacks = get_adapter(model).stacks(model)
        n_dec, n_enc = len(stacks["decoder"]), len(stacks["encoder"])
        if c.decoder_layers > n_dec:
            raise ConfigError(f"decoder_layers {c.decoder_layers} exceeds the model's {n_dec} decoder layers")
        dec_keep = select_layers(n_dec, c.decoder_layers, c.decoder_selection)
        surgery.drop_layers(model, "decoder", dec_keep)
        enc_keep = list(range(n_enc))
        self.target = 0.0
        if c.encoder_pruning == "layers" and c.encoder_sparsity > 0:
            enc_keep = select_layers(n_enc, max(1, round((1 - c.encoder_sparsity) * n_enc)), "stride")
            surgery.drop_layers(model, "encoder", enc_keep)
        elif c.encoder_pruning == "l0" and c.encoder_sparsity > 0:
            self.target = c.encoder_sparsity
            self.add_masks(model, ("encoder",), layer_masks=False)
        self.layers = {"encoder": enc_keep, "decoder": dec_keep}
        return model


class Cofi(L0Pruning):
    def cut(self, model):
        self.target = self.config.sparsity
        if self.target > 0:
            self.add_masks(model, ("encoder", "decoder"), layer_masks=True)
        self.layers = {name: list(range(len(layers))) for name, layers in get_adapter(model).stacks(model).items()}
        return model
