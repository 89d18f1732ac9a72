"""Removing decoder blocks of any decoder-only model: the config cut to the kept blocks, checked
against what transformers builds from it (Men et al. 2024, ShortGPT; Du et al. 2023, truncation).

transformers builds block ``i`` from the config and runs it by its index: ``layer_types[i]`` picks
its attention mask, rotary table and cache layer (sliding vs full attention: Gemma 2/3, Cohere 2,
Qwen 2 …), other lists give one entry per block, index lists name blocks (``mlp_only_layers``).
So after blocks ``keep`` (of ``total``) are kept, ``cut_config`` gives what changes in the config of
the shorter model: the block count, every top-level list of ``total`` entries cut to ``keep`` (token ids excepted), every
list of block indices (a name holding ``layer``) renumbered. ``check_cut`` builds the model class from
the changed config on the meta device (no memory) and compares each built block with the kept one it
stands for: module classes, parameter shapes and plain attributes (``is_sliding``,
``sliding_window``, ``attention_type`` …; a block's own index aside). A config that cannot describe
the kept blocks (a period / offset pattern, a string per layer) is one ``UnsupportedModelError``
before any block is removed, so what is saved reloads as it ran.
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from ..errors import UnsupportedModelError
from .blocks import decoder_blocks, layer_count

PLAIN = (bool, int, float, str, type(None))


def cut_config(config, keep: list[int]) -> dict:
    """``{attribute: value}`` that make ``config`` describe its blocks ``keep`` only (module docstring)."""
    key, total = layer_count(config)
    changes = {key: len(keep)}
    where = {old: new_index for new_index, old in enumerate(keep)}
    for name in config.to_dict():
        value = getattr(config, name, None)
        if not isinstance(value, (list, tuple)) or name.endswith(("token_id", "token_ids")):
            continue
        if len(value) == total:
            changes[name] = type(value)(value[i] for i in keep)
        elif "layer" in name and value and all(isinstance(v, int) and 0 <= v < total for v in value):
            changes[name] = type(value)(where[v] for v in value if v in where)
    return changes


def apply_changes(config, changes: dict) -> None:
    """Set ``changes`` (``cut_config``) on ``config`` itself: the model's modules share that object."""
    for name, value in changes.items():
        setattr(config, name, value)


def check_cut(model: nn.Module, changes: dict, keep: list[int]) -> None:
    """Blocks built from the config with ``changes`` equal the kept blocks of ``model``; else one error."""
    _, blocks = decoder_blocks(model)
    if layer_count(model.config)[1] != len(blocks):
        raise UnsupportedModelError(f"removing blocks of {model.config.model_type}: its config counts "
                                    f"{layer_count(model.config)[1]} blocks, the model holds {len(blocks)}")
    config = copy.deepcopy(model.config)
    try:
        apply_changes(config, changes)
        with torch.device("meta"):
            built = type(model)(config)
    except Exception as exc:  # noqa: BLE001 - a config the class refuses cannot be saved either
        raise UnsupportedModelError(f"removing blocks of {config.model_type}: its config, cut to blocks {keep}, "
                                    f"does not build ({type(exc).__name__}: {str(exc)[:150]})") from exc
    _, rebuilt = decoder_blocks(built)
    for new_index, old_index in enumerate(keep):
        difference = _differs(_signature(rebuilt[new_index], new_index), _signature(blocks[old_index], old_index))
        if difference:
            raise UnsupportedModelError(
                f"removing blocks of {config.model_type}: its config cannot describe kept block {old_index} as block "
                f"{new_index} ({difference}); forgetless keeps this family's depth")


def _signature(block: nn.Module, index: int) -> dict:
    """Module classes, parameter shapes and plain attributes of ``block`` (its own index ``index``
    written as ``"own index"``)."""
    out = {}
    for name, module in block.named_modules():
        attributes = {k: ("own index" if v == index and k.endswith(("idx", "id", "index", "number", "num")) else v)
                      for k, v in vars(module).items()
                      if not k.startswith("_") and k != "training" and isinstance(v, PLAIN)}
        shapes = {k: tuple(p.shape) for k, p in module.named_parameters(recurse=False)}
        out[name or "block"] = (type(module).__name__, shapes, attributes)
    return out


def _differs(built: dict, kept: dict) -> str | None:
    if built.keys() != kept.keys():
        return f"modules {sorted(set(built) ^ set(kept))[:3]} differ"
    for name, (kind, shapes, attributes) in built.items():
        other = kept[name]
        if kind != other[0] or shapes != other[1]:
            return f"{name} is {other[0]} {other[1]}, the config builds {kind} {shapes}"
        for key in attributes.keys() & other[2].keys():
            if attributes[key] != other[2][key]:
                return f"{name}.{key} is {other[2][key]!r}, the config gives {attributes[key]!r}"
    return None
