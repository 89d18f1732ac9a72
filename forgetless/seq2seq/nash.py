"""NASH (Ko et al. 2023) and the CoFi-style baseline (Xia et al. 2022) as prepare → train → finalize.

NASH (§4): a *shallow decoder* — keep d_s decoder layers chosen by uniform selection (§4.1; the
low / high selections of Table 3 as options) and initialise them from the teacher's layers —
and a *narrow encoder* — hard-concrete L0 masks on every encoder head and FFN unit, trained with
the Lagrangian term to the target encoder sparsity (§4.2, appendix B; Table 4's alternatives:
no encoder pruning, or uniform layer selection in the encoder too). Training uses
``L = KL + λ_enc L_h^enc + λ_dec L_h^dec + R`` (§4.3, λ = 0.001), where the decoder's ℓ-th kept
layer is distilled from the teacher layer it was copied from; ``finalize`` turns the learned
masks into deterministic masks that reach the target and removes the units; the pruned model is
then fine-tuned (with the same distillation, without R).

CoFi-style baseline: no layer selection; L0 masks on heads, FFN units and whole attention / FFN
sub-layers in encoder *and* decoder, one sparsity target over all of them; hidden-state
distillation layer ℓ → layer ℓ (CoFi's dynamic layer matching is not reproduced).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass

from torch import nn

from ..errors import ConfigError
from ..models import surgery
from ..models.adapters import get_adapter
from .l0masks import L0Masks
from .selection import select_layers
from .trainer import DistillSpec


@dataclass
class PruneConfig:
    lambda_enc: float = 0.001
    lambda_dec: float = 0.001
    kd_temperature: float = 1.0
    kd_direction: str = "forward"
    sparsity_warmup: float = 0.5  # fraction of the pruning steps over which the target rises
    l0_learning_rate: float = 0.01
    init_droprate: float = 0.5  # CoFi's initial log α = log(1 − p) − log p
    prune_epochs: float = 1.0
    finetune_epochs: float = 1.0

    def _check(self):
        if not 0 < self.init_droprate < 1:
            raise ConfigError(f"init_droprate must be in (0, 1), got {self.init_droprate}")
        if not 0 <= self.sparsity_warmup <= 1:
            raise ConfigError("sparsity_warmup is a fraction of the pruning steps in [0, 1]")
        if self.prune_epochs <= 0 or self.finetune_epochs < 0:
            raise ConfigError("prune_epochs must be > 0 and finetune_epochs >= 0")

    @property
    def init_log_alpha(self) -> float:
        return math.log(1 - self.init_droprate) - math.log(self.init_droprate)


@dataclass
class NashConfig(PruneConfig):
    decoder_layers: int = 3
    decoder_selection: str = "uniform"  # uniform | low | high   (Table 3)
    encoder_pruning: str = "l0"  # l0 | none | uniform        (Table 4)
    encoder_sparsity: float = 0.3

    def __post_init__(self):
        self._check()
        if self.encoder_pruning not in ("l0", "none", "uniform"):
            raise ConfigError(f"encoder_pruning must be l0, none or uniform, got {self.encoder_pruning!r}")
        if not 0 <= self.encoder_sparsity < 1:
            raise ConfigError(f"encoder_sparsity must be in [0, 1), got {self.encoder_sparsity}")
        if self.decoder_layers < 1:
            raise ConfigError("decoder_layers must be >= 1")


@dataclass
class CofiConfig(PruneConfig):
    sparsity: float = 0.5  # of all encoder + decoder head / FFN parameters

    def __post_init__(self):
        self._check()
        if not 0 <= self.sparsity < 1:
            raise ConfigError(f"sparsity must be in [0, 1), got {self.sparsity}")


class _Recipe:
    name = "base"
    target = 0.0

    def __init__(self, config):
        self.config = config
        self.enc_pairs: list = []
        self.dec_pairs: list = []
        self.layers: dict[str, list[int]] = {}

    def spec(self, prune_steps: int, with_masks: bool = True) -> DistillSpec:
        c = self.config
        return DistillSpec(kd_weight=1.0, ce_weight=0.0, kd_temperature=c.kd_temperature, kd_direction=c.kd_direction,
                           lambda_enc=c.lambda_enc, lambda_dec=c.lambda_dec, enc_pairs=self.enc_pairs,
                           dec_pairs=self.dec_pairs, target_sparsity=self.target if with_masks else 0.0,
                           sparsity_warmup_steps=int(c.sparsity_warmup * prune_steps),
                           l0_learning_rate=c.l0_learning_rate)

    def finalize(self, student: nn.Module) -> nn.Module:
        """Deterministic masks reaching the target → fold and slice; returns a plain model."""
        masks = getattr(student, "l0_masks", None)
        if masks is None:
            return student
        values = masks.deterministic(self.target)
        self.achieved_sparsity = masks.sparsity_of(values)
        masks.finalize(student, values)
        del student.l0_masks
        return student


class Nash(_Recipe):
    name = "nash"

    def prepare(self, teacher: nn.Module) -> nn.Module:
        c = self.config
        student = copy.deepcopy(teacher)
        adapter = get_adapter(student)
        if not adapter.is_seq2seq:
            raise ConfigError("NASH prunes encoder-decoder models (T5, BART, bert2bert)")
        stacks = adapter.stacks(student)
        n_dec, n_enc = len(stacks["decoder"]), len(stacks["encoder"])
        dec_keep = select_layers(n_dec, c.decoder_layers, c.decoder_selection)
        surgery.drop_layers(student, "decoder", dec_keep)
        enc_keep = list(range(n_enc))
        self.target = 0.0
        if c.encoder_pruning == "uniform" and c.encoder_sparsity > 0:
            enc_keep = select_layers(n_enc, max(1, round((1 - c.encoder_sparsity) * n_enc)), "uniform")
            surgery.drop_layers(student, "encoder", enc_keep)
        elif c.encoder_pruning == "l0" and c.encoder_sparsity > 0:
            self.target = c.encoder_sparsity
            student.l0_masks = L0Masks(student, ("encoder",), init_log_alpha=c.init_log_alpha,
                                       target=self.target).install(student)
        self.layers = {"encoder": enc_keep, "decoder": dec_keep}
        self.enc_pairs = list(enumerate(enc_keep))
        self.dec_pairs = list(enumerate(dec_keep))  # student layer ℓ ↔ teacher layer L_s[ℓ]
        return student


class Cofi(_Recipe):
    name = "cofi"

    def prepare(self, teacher: nn.Module) -> nn.Module:
        c = self.config
        student = copy.deepcopy(teacher)
        adapter = get_adapter(student)
        if not adapter.is_seq2seq:
            raise ConfigError("the CoFi-style seq2seq baseline needs an encoder-decoder model")
        stacks = adapter.stacks(student)
        self.target = c.sparsity
        if c.sparsity > 0:
            student.l0_masks = L0Masks(student, ("encoder", "decoder"), layer_masks=True,
                                       init_log_alpha=c.init_log_alpha, target=self.target).install(student)
        self.layers = {name: list(range(len(layers))) for name, layers in stacks.items()}
        self.enc_pairs = [(i, i) for i in self.layers["encoder"]]
        self.dec_pairs = [(i, i) for i in self.layers["decoder"]]
        return student


RECIPES = {"nash": (Nash, NashConfig), "cofi": (Cofi, CofiConfig)}
