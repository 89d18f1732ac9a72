"""Where any decoder-only language model of transformers keeps its decoder blocks, found without
per-family code, as llm-compressor finds its sequential targets: the block classes are the ones the
model names in ``_no_split_modules`` (the units accelerate never splits across devices), and the
blocks are the ``nn.ModuleList`` holding them (``model.layers``, ``transformer.h``,
``gpt_neox.layers``, ``backbone.layers``, …).

A model type is *decoder-only* when transformers registers a causal-LM head for it
(``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``) whose class is a ``…ForCausalLM`` / ``…LMHeadModel``, the type
is not an encoder run as a decoder (it also has a masked-LM head: BERT, RoBERTa, …) and its config is
not an encoder-decoder's (BART, Whisper: their ``…ForCausalLM`` is the decoder half). Multimodal
``…ForConditionalGeneration`` wrappers are not decoder-only; their ``…_text`` types are.
"""
from __future__ import annotations

from torch import nn

from ..errors import UnsupportedModelError

CAUSAL_HEADS = ("ForCausalLM", "LMHeadModel", "WithLMHead")
LAYER_COUNT_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")


def is_decoder_only(config) -> bool:
    """Whether ``config`` (a transformers config) describes a decoder-only language model (module docstring)."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    model_type = getattr(config, "model_type", None)
    head = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(model_type)
    return bool(head and head.endswith(CAUSAL_HEADS) and model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES
                and not getattr(config, "is_encoder_decoder", False))


def is_causal_lm(model: nn.Module) -> bool:
    """A decoder-only model with its language-modelling head (``…ForCausalLM``, ``GPT2LMHeadModel``)."""
    return is_decoder_only(getattr(model, "config", None)) and type(model).__name__.endswith(CAUSAL_HEADS)


def decoder_blocks(model: nn.Module) -> tuple[str, nn.ModuleList]:
    """``(name, blocks)``: the one ``nn.ModuleList`` of the model's decoder blocks. Its children are all of
    classes named in ``_no_split_modules`` (a model naming none: all of one class); lists inside such a
    list are not candidates. None or several candidates: one ``UnsupportedModelError`` naming them."""
    classes = set(getattr(model, "_no_split_modules", None) or ())
    found: list[tuple[str, nn.ModuleList]] = []
    for name, module in model.named_modules():
        if not isinstance(module, nn.ModuleList) or not len(module) or any(name.startswith(f"{f}.") for f, _ in found):
            continue
        kinds = {type(child).__name__ for child in module}
        if (kinds <= classes) if classes else (len(kinds) == 1 and _has_weights(module[0])):
            found.append((name, module))
    kind = getattr(getattr(model, "config", None), "model_type", type(model).__name__)
    if not found:
        raise UnsupportedModelError(f"{type(model).__name__} ({kind}): no nn.ModuleList of decoder blocks "
                                    f"(classes {sorted(classes) or 'unnamed'}); forgetless cannot find its layers")
    if len(found) > 1:
        raise UnsupportedModelError(f"{type(model).__name__} ({kind}): several lists of blocks "
                                    f"({', '.join(name for name, _ in found)}); forgetless compresses models with one "
                                    "stack of decoder blocks")
    return found[0]


def _has_weights(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def layer_count(config) -> tuple[str, int]:
    """``(attribute, count)``: the config attribute holding the number of decoder blocks
    (``num_hidden_layers``, through the config's ``attribute_map`` for most families)."""
    for key in LAYER_COUNT_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return key, value
    raise UnsupportedModelError(f"{getattr(config, 'model_type', type(config).__name__)}: no config attribute "
                                f"({', '.join(LAYER_COUNT_KEYS)}) holds its number of decoder blocks")
