"""Models given as Python objects (``forgetless.compress(model=<PreTrainedModel>, tokenizer=...)``).

A model kind adopts such a model instead of loading one by name: it checks that the object fits
the kind (a sequence classifier predicting the task's labels in the same order, an
encoder-decoder, or a decoder-only language model), finds its tokenizer (the one given, the task's
own, else the tokenizer saved beside ``model.name_or_path`` when that is a local folder) and
returns a deep copy, so the caller's object is never trained, pruned or sliced.
"""
from __future__ import annotations

import copy
from pathlib import Path

from torch import nn

from ..errors import ConfigError, UnsupportedModelError
from ..models.adapters import get_adapter
from ..models.blocks import is_causal_lm
from ..models.checks import load_tokenizer
from ..models.io import model_fingerprint
from ..models.loading import check_label_order

HEAD = {"classifier": "ForSequenceClassification", "causal-lm": "ForCausalLM"}


def is_in_memory(model) -> bool:
    """Whether ``model`` is a model object (anything else is a name or a path)."""
    return isinstance(model, nn.Module)


def label(model: nn.Module) -> str:
    """How an in-memory model is named in the run configuration and the report card: its class,
    ``name_or_path`` and a hash of its weights (so a rerun into the same output folder with other
    weights is another run, not a resumed one)."""
    source = getattr(getattr(model, "config", None), "name_or_path", "") or ""
    return f"in-memory {type(model).__name__}" + (f" {source}" if source else "") + f" sha256:{model_fingerprint(model)[:12]}"


def kind_name_of(model: nn.Module) -> str:
    """The model kind that runs a model object: its head decides (an encoder-decoder: seq2seq)."""
    check_model_object(model, "any")
    if get_adapter(model).is_seq2seq:
        return "seq2seq"
    return "causal-lm" if is_causal_lm(model) else "classifier"


def check_model_object(model, kind_name: str, task=None) -> None:
    """One clear error when ``model`` cannot be run as a ``kind_name`` model on ``task``."""
    if not is_in_memory(model) or getattr(model, "config", None) is None:
        raise ConfigError(f"model: expected a model name, a folder or a transformers PreTrainedModel; "
                          f"got {type(model).__name__}")
    adapter = get_adapter(model)  # an architecture forgetless cannot compress: UnsupportedModelError
    name = type(model).__name__
    if kind_name == "seq2seq" and not adapter.is_seq2seq:
        raise UnsupportedModelError(f"model: a {name} is not an encoder-decoder; this run needs one "
                                    "(a generation task or a seq2seq-only method)")
    if kind_name in HEAD and not (is_causal_lm(model) if kind_name == "causal-lm" else name.endswith(HEAD[kind_name])):
        raise UnsupportedModelError(f"model: a {name} has no {HEAD[kind_name]} head; the {kind_name} model kind "
                                    f"needs a ...{HEAD[kind_name]} model")
    labels = getattr(task, "label_names", None)
    if kind_name == "classifier" and labels:
        check_label_order(model.config, labels, f"the given {name}", where=f"model: {name}")


def find_tokenizer(model: nn.Module, tokenizer, task):
    """The tokenizer given, else the task's own, else the one saved with ``model.name_or_path``."""
    if tokenizer is not None:
        return check_tokenizer_object(tokenizer)
    if getattr(task, "tokenizer", None) is not None:
        return task.tokenizer
    source = getattr(model.config, "name_or_path", "") or ""
    if source and Path(source).expanduser().is_dir():
        return load_tokenizer(source)  # missing or unreadable tokenizer files: one error naming the folder
    raise ConfigError(f"tokenizer: none given for the in-memory {type(model).__name__}, and its name_or_path "
                      f"({source or 'empty'}) is not a local folder holding one; pass tokenizer=")


def check_tokenizer_object(tokenizer):
    """``tokenizer`` (returned) is a transformers tokenizer object; one ``ConfigError`` otherwise."""
    if not callable(tokenizer) or not hasattr(tokenizer, "pad_token_id"):
        raise ConfigError(f"tokenizer: expected a transformers tokenizer, got {type(tokenizer).__name__}")
    return tokenizer


def adopt(model: nn.Module, tokenizer, task, kind_name: str):
    """``(copy of model, tokenizer)`` after the checks above; ``model`` itself is left untouched (the run moves the
    copy to its ``--device``: ``pipeline._steps``)."""
    check_model_object(model, kind_name, task)
    tokenizer = find_tokenizer(model, tokenizer, task)
    if tokenizer.pad_token_id is None:
        raise ConfigError(f"tokenizer: the tokenizer of the given {type(model).__name__} has no pad token; "
                          "set tokenizer.pad_token (e.g. to its end-of-sequence token)")
    copied = copy.deepcopy(model)
    if getattr(copied.config, "pad_token_id", None) is None:
        copied.config.pad_token_id = tokenizer.pad_token_id  # decoder classifiers pool the last non-pad token
    return copied, tokenizer
