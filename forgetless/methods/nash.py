"""NASH (Ko et al. 2023, "A Simple Unified Framework of Structured Pruning for Accelerating
Encoder-Decoder Language Models") and the CoFi-style baseline it compares with (Xia et al. 2022),
as ordinary compression methods for encoder-decoder models.

NASH (§4): a *shallow decoder* — keep d_s decoder layers (§4.1's uniform selection = the
``stride`` strategy of ``layer_selection``; Table 3's low / high = ``first`` / ``last``),
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

import math
from dataclasses import dataclass, replace

import torch
from torch import nn

from ..errors import ConfigError, UnsupportedModelError
from ..models import surgery
from ..models.adapters import get_adapter
from .base import METHODS, CompressionContext, CompressionMethod
from .l0_masks import L0Masks, LagrangianRegularizer
from .layer_selection import check_strategy, select_layers

ENCODER_PRUNING = ("l0", "layers", "none")
PROBE_EXAMPLES = 8


@dataclass
class L0Options:
    """Options shared by the L0-mask methods (``nash``, ``cofi``)."""

    sparsity_warmup: float = 0.5   # fraction of the pruning steps over which the target rises from 0
    l0_learning_rate: float = 0.01  # learning rate of log α and the Lagrange multipliers
    init_droprate: float = 0.5     # CoFi's initial log α = log(1 − p) − log p
    finetune_epochs: float = 1.0   # fine-tuning after the units are removed (0: none)

    def __post_init__(self) -> None:
        if not 0 < self.init_droprate < 1:
            raise ConfigError(f"init_droprate must be in (0, 1), got {self.init_droprate}")
        if not 0 <= self.sparsity_warmup <= 1:
            raise ConfigError(f"sparsity_warmup is a fraction of the pruning steps in [0, 1], got {self.sparsity_warmup}")
        if not 0 < self.l0_learning_rate < 10:
            raise ConfigError(f"l0_learning_rate must be in (0, 10), got {self.l0_learning_rate}")
        if not 0 <= self.finetune_epochs < 1e6:
            raise ConfigError(f"finetune_epochs must be >= 0, got {self.finetune_epochs}")

    @property
    def init_log_alpha(self) -> float:
        return math.log(1 - self.init_droprate) - math.log(self.init_droprate)


@dataclass
class NashConfig(L0Options):
    decoder_layers: int = 3            # d_s, decoder layers kept
    decoder_selection: str = "stride"  # stride (NASH's uniform, §4.1) | first | last | spread (Table 3)
    encoder_pruning: str = "l0"        # l0 (NASH) | layers (drop encoder layers by stride) | none (Table 4)
    encoder_sparsity: float = 0.3      # target share of encoder head/FFN parameters removed

    def __post_init__(self) -> None:
        super().__post_init__()
        check_strategy(self.decoder_selection, "decoder_selection")
        if self.encoder_pruning not in ENCODER_PRUNING:
            raise ConfigError(f"encoder_pruning must be one of {', '.join(ENCODER_PRUNING)}, got {self.encoder_pruning!r}")
        if not 0 <= self.encoder_sparsity < 1:
            raise ConfigError(f"encoder_sparsity must be in [0, 1), got {self.encoder_sparsity}")
        if self.decoder_layers < 1:
            raise ConfigError(f"decoder_layers must be >= 1, got {self.decoder_layers}")


@dataclass
class CofiConfig(L0Options):
    sparsity: float = 0.5  # target share of all encoder + decoder head / FFN parameters removed

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.sparsity < 1:
            raise ConfigError(f"sparsity must be in [0, 1), got {self.sparsity}")


class L0Pruning(CompressionMethod):
    """prepare (layer choice + L0 masks) → train with the regulariser → finalize (deterministic
    masks, physical removal, masked == sliced check) → fine-tune."""

    kinds = ("generation", "classification")
    seq2seq_only = True
    model_kinds = ("seq2seq",)
    default_objective = "nash-distil"

    def __init__(self, config=None):
        super().__init__(config)
        self.target = 0.0
        self.layers: dict[str, list[int]] = {}
        self.record: dict = {}

    def check_model(self, model: nn.Module) -> None:
        if not get_adapter(model).is_seq2seq:
            raise UnsupportedModelError(f"{self.name} prunes encoder-decoder models (T5, BART, bert2bert), "
                                        f"got {type(model).__name__}")

    def add_masks(self, model: nn.Module, stacks: tuple[str, ...], layer_masks: bool) -> None:
        model.l0_masks = L0Masks(model, stacks, layer_masks=layer_masks, init_log_alpha=self.config.init_log_alpha,
                                 target=self.target).install(model)

    def compress(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        self.check_model(model)
        model = self.prepare(model, ctx)
        ctx.layer_map = self.layers
        masks = getattr(model, "l0_masks", None)
        regularizer = None
        if masks is not None:
            tc = ctx.train_config
            steps = tc.max_steps if tc.max_steps > 0 else math.ceil(len(ctx.task.train) / tc.batch_size) * tc.epochs
            regularizer = LagrangianRegularizer(masks, self.target, int(self.config.sparsity_warmup * steps),
                                                self.config.l0_learning_rate)
        model = ctx.train(model, f"train-{self.name}-prune", regularizer=regularizer)
        model = self.finalize(model, ctx)
        if self.config.finetune_epochs > 0:
            config = replace(ctx.train_config, epochs=self.config.finetune_epochs, max_steps=-1)
            model = ctx.train(model, f"train-{self.name}-finetune", config=config)
        ctx.notes.append(f"{self.name}: kept layers {self.layers}, target sparsity {self.target:.2f}, achieved "
                         f"{self.record.get('achieved_sparsity', 0.0):.3f}; greedy generation masked == sliced on "
                         f"{PROBE_EXAMPLES} training sources: {self.record.get('masked_equals_sliced')}")
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


@METHODS.register("nash", NashConfig)
class Nash(L0Pruning):
    name = "nash"

    def prepare(self, model, ctx):
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


@METHODS.register("cofi", CofiConfig)
class Cofi(L0Pruning):
    name = "cofi"

    def prepare(self, model, ctx):
        self.target = self.config.sparsity
        if self.target > 0:
            self.add_masks(model, ("encoder", "decoder"), layer_masks=True)
        self.layers = {name: list(range(len(layers))) for name, layers in get_adapter(model).stacks(model).items()}
        return model
