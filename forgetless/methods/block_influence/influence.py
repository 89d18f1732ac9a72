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

import torch
from torch import nn

from ...errors import ConfigError
from ...metrics.predict import scoring_mode
from ...models.adapters import get_adapter
from ...models.gates import HookSet
from ...training.encode import TOKEN_KEYS


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

    device = next(model.parameters()).device
    with HookSet() as hooks, scoring_mode(model, freeze=False):
        for i, layer in enumerate(layers[stack]):
            hooks.add(layer.register_forward_pre_hook(before(i), with_kwargs=True))
            hooks.add(layer.register_forward_hook(after(i), with_kwargs=True))
        for batch in batches:
            inputs = {k: v.to(device) for k, v in batch.items() if k in TOKEN_KEYS or k.startswith("decoder_")}
            token_mask[0] = inputs.get(mask_key)
            model(**inputs)
    if min(counts) == 0:
        raise ConfigError(f"block-influence: no calibration tokens reached stack {stack!r}")
    return [1.0 - s / c for s, c in zip(sums, counts)]
