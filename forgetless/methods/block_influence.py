"""Layer removal by Block Influence (ShortGPT: Men et al. 2024, "ShortGPT: Layers in Large Language
Models are More Redundant Than You Expect", arXiv:2403.03853, the Block Influence definition):

    BI_i = 1 − E_{X,t} [ x_{i,t}ᵀ x_{i+1,t} / (‖x_{i,t}‖₂ ‖x_{i+1,t}‖₂) ]

with x_{i,t} the hidden state entering layer i at token t and x_{i+1,t} the one leaving it, averaged
over the non-padding tokens of calibration text. A layer that barely rotates its input (BI near 0,
an identity layer has BI = 0) is redundant; the ``remove`` lowest-BI layers are removed physically,
then the model is fine-tuned. Works for every adapter: a model's layer stack is scored as a whole
(``stack``: the first stack by default, "encoder" for encoders and encoder-decoders, "decoder" for
decoder-only models).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..errors import ConfigError
from ..fsutil import atomic_write_json
from ..heads.model_scoring import scoring_batches
from ..heads.runner import scoring_subset
from ..models.adapters import get_adapter
from ..models.surgery import drop_layers
from ..training.encode import TOKEN_KEYS
from .base import METHODS, CompressionContext, CompressionMethod, check_recovery


@dataclass
class BlockInfluenceConfig:
    layers: int = 0  # layers kept (as for truncate); 0: give ``remove`` instead
    remove: int = 0  # layers removed; 0: give ``layers`` instead
    calibration_examples: int = 256  # seeded, label-stratified subset of the training set
    calibration_batch: int = 16
    calibration_length: int = 128  # max tokens per calibration example
    stack: str = ""  # layer stack to shorten; "": the model's first stack
    recovery: str = "fine-tune"  # fine-tune | none (ShortGPT's post-training setting)

    def __post_init__(self):
        check_recovery(self.recovery)
        if self.layers < 0 or self.remove < 0 or (self.layers > 0) == (self.remove > 0):
            raise ConfigError(f"block-influence: give exactly one of layers (kept) or remove (removed) as a "
                              f"positive count, got layers={self.layers}, remove={self.remove}")
        if self.calibration_examples < 1 or self.calibration_batch < 1 or self.calibration_length < 2:
            raise ConfigError("block-influence: calibration_examples >= 1, calibration_batch >= 1 and "
                              "calibration_length >= 2 required")

    def removed_count(self, total: int) -> int:
        """Layers to remove from a stack of ``total``; at least one must stay and one must go."""
        count = self.remove if self.remove else total - self.layers
        if not 1 <= count <= total - 1:
            what = f"remove={self.remove}" if self.remove else f"layers={self.layers}"
            raise ConfigError(f"block-influence: {what} is not possible for a stack of {total} layers; "
                              f"keep between 1 and {total - 1}")
        return count


# ----- pure math ---------------------------------------------------------------------------------
def token_cosines(x_in: torch.Tensor, x_out: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """cos(x_{i,t}, x_{i+1,t}) for every token t with ``mask`` ≠ 0 (shape (batch, tokens, hidden) in,
    1-D out, float32)."""
    cos = nn.functional.cosine_similarity(x_in.float(), x_out.float(), dim=-1, eps=1e-8)
    return cos.flatten() if mask is None else cos[mask.to(cos.device) != 0]


def block_influence(x_in: torch.Tensor, x_out: torch.Tensor, mask: torch.Tensor | None = None) -> float:
    """ShortGPT (Men et al. 2024) Block Influence: BI = 1 − mean over non-padding tokens of cos(layer input, layer output)."""
    return 1.0 - float(token_cosines(x_in, x_out, mask).double().mean())


def lowest_influence(scores: list[float], count: int) -> list[int]:
    """Indices of the ``count`` layers with the lowest BI (ties: the lower index first), sorted."""
    order = sorted(range(len(scores)), key=lambda i: (scores[i], i))
    return sorted(order[:count])


# ----- model glue --------------------------------------------------------------------------------
@torch.no_grad()
def layer_block_influence(model: nn.Module, batches: list[dict], stack: str) -> list[float]:
    """BI of every layer of ``stack`` over ``batches`` (dicts of model inputs; the token mask is
    ``attention_mask``, or ``decoder_attention_mask`` for an encoder-decoder's decoder stack).
    Cosines of all batches are pooled per layer before averaging (E over X and t)."""
    adapter = get_adapter(model)
    layers = adapter.stacks(model)
    if stack not in layers:
        raise ConfigError(f"block-influence: model has no layer stack {stack!r}; stacks: {sorted(layers)}")
    mask_key = "decoder_attention_mask" if adapter.is_seq2seq and stack == "decoder" else "attention_mask"
    n = len(layers[stack])
    sums, counts = [0.0] * n, [0] * n
    layer_inputs: dict[int, torch.Tensor] = {}
    token_mask: list = [None]  # the running batch's mask

    def before(index):
        def hook(module, args, kwargs):
            layer_inputs[index] = args[0] if args else kwargs["hidden_states"]
        return hook

    def after(index):
        def hook(module, args, kwargs, output):
            hidden_out = output[0] if isinstance(output, tuple) else output
            cos = token_cosines(layer_inputs.pop(index), hidden_out, token_mask[0])
            sums[index] += float(cos.double().sum())
            counts[index] += cos.numel()
        return hook

    handles = []
    for i, layer in enumerate(layers[stack]):
        handles.append(layer.register_forward_pre_hook(before(i), with_kwargs=True))
        handles.append(layer.register_forward_hook(after(i), with_kwargs=True))
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    try:
        for batch in batches:
            inputs = {k: v.to(device) for k, v in batch.items() if k in TOKEN_KEYS or k.startswith("decoder_")}
            token_mask[0] = inputs.get(mask_key)
            model(**inputs)
    finally:
        for handle in handles:
            handle.remove()
        model.train(was_training)
    if min(counts) == 0:
        raise ConfigError(f"block-influence: no calibration tokens reached stack {stack!r}")
    return [1.0 - s / c for s, c in zip(sums, counts)]


@METHODS.register("block-influence", BlockInfluenceConfig)
class BlockInfluenceRemoval(CompressionMethod):
    """Score layers by Block Influence on calibration text, remove the lowest, fine-tune."""

    name = "block-influence"

    def __init__(self, config=None):
        super().__init__(config)
        self.record: dict = {}

    def prepare(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        cfg = self.config
        stacks = get_adapter(model).stacks(model)
        stack = cfg.stack or next(iter(stacks))
        if stack not in stacks:
            raise ConfigError(f"block-influence: stack {stack!r} does not exist; stacks: {', '.join(stacks)}")
        total = len(stacks[stack])
        count = cfg.removed_count(total)
        examples = scoring_subset(ctx.task.train, cfg.calibration_examples, ctx.seed)
        batches = scoring_batches(ctx.tokenizer, examples, cfg.calibration_batch, cfg.calibration_length)
        scores = layer_block_influence(model, batches, stack)
        removed = lowest_influence(scores, count)
        keep = [i for i in range(total) if i not in removed]
        drop_layers(model, stack, keep)
        self.record = {"method": self.name, "stack": stack, "block_influence": scores, "removed": removed,
                       "kept": keep, "calibration_examples": len(examples), "seed": ctx.seed}
        atomic_write_json(ctx.work_dir / f"{self.name}-scores.json", self.record)
        ctx.notes.append(f"block-influence: BI per {stack} layer {[round(s, 4) for s in scores]} on "
                         f"{len(examples)} calibration examples; removed layers {removed} of {total}"
                         + (", then fine-tuned" if self.recovers() else ", no recovery training"))
        return model

    def compress(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        model = self.prepare(model, ctx)
        if self.recovers():
            model = ctx.train(model, f"train-{self.name}", callbacks=self.callbacks(model, ctx))
        return self.finalize(model, ctx)
