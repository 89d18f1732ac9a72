"""Decoder-only language models for the ``causal-lm`` model kind: a tiny Llama by name, a forgetless
folder, or any local / hub causal-LM folder (safetensors only), with a pad token ensured."""
from __future__ import annotations

import torch
import transformers

from ..errors import ForgetlessError, UnsupportedModelError
from .adapters import get_adapter
from .checks import trust_remote_code
from .io import is_forgetless_folder, load_model
from .loading import bundled_tokenizer, resolve_model_path
from .tiny import tiny_llama_config

TINY_CAUSAL = ("tiny-llama",)


def load_causal_lm(name_or_path: str, device: str = "cpu", tokenizer=None, seed: int = 0):
    """``(model, tokenizer)`` of a decoder-only LM with its language-modelling head."""
    if name_or_path in TINY_CAUSAL:
        tokenizer = tokenizer or bundled_tokenizer()
        torch.manual_seed(seed)
        model = transformers.LlamaForCausalLM(tiny_llama_config(len(tokenizer), tokenizer.pad_token_id or 0))
        return model.to(device), tokenizer
    path = resolve_model_path(name_or_path)
    if is_forgetless_folder(path):
        model, saved = load_model(path, device=device)
    else:
        try:
            model = transformers.AutoModelForCausalLM.from_pretrained(path, use_safetensors=True, trust_remote_code=trust_remote_code())
            saved = transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code())
        except (OSError, ValueError) as exc:
            raise ForgetlessError(f"could not load causal language model {name_or_path!r}: {exc}") from exc
    if get_adapter(model).is_seq2seq:
        raise UnsupportedModelError(f"{name_or_path!r} is not a decoder-only language model")
    if saved.pad_token_id is None:
        if saved.eos_token is None:
            raise ForgetlessError(f"{name_or_path!r}: the tokenizer has neither a pad nor an end-of-sequence token")
        saved.pad_token = saved.eos_token
    model.config.pad_token_id = saved.pad_token_id
    return model.to(device), saved
