"""Can stock ``transformers`` rebuild a compressed model from its ``config.json``?

Stock ``from_pretrained`` builds every layer of a stack from one config value, so a model saved by
``io.save_model`` loads without forgetless only when

* every layer of a stack has the same FFN width and that width is in the config (``save_model``
  writes it there, see ``stock_config``), and the layer counts are in the config (layer removal
  updates them already, see ``adapters.after_layer_drop``);
* no attention head was removed. A head count cannot be written into the config exactly:
  BERT / RoBERTa / DistilBERT / BART derive the head size as ``hidden_size / num_heads``, so fewer
  heads in the config would mean larger heads; T5 keeps its head size (``d_kv``) but a pruned T5
  stack carries one relative-position-bias table per layer, which stock T5 does not build.

Both checks build the stock model on the ``meta`` device (no memory, no weights) and compare
shapes; nothing here trusts a rule that could drift from what ``transformers`` actually builds.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
import transformers
from safetensors import safe_open
from torch import nn

from .adapters import get_adapter
from .checks import trust_remote_code
from .manifest import read_manifest, transformers_model_class
from .surgery import model_shape


def _set_dotted(config, dotted: str, value) -> None:
    *parents, name = dotted.split(".")
    for parent in parents:
        config = getattr(config, parent)
    setattr(config, name, value)


def uniform_ffn_widths(shape: dict) -> dict[str, int]:
    """``{stack: width}`` for every stack whose layers all have the same FFN width."""
    widths: dict[str, set[int]] = {}
    for stack, _layer, width in shape["ffn"]:
        widths.setdefault(stack, set()).add(int(width))
    return {stack: next(iter(ws)) for stack, ws in widths.items() if len(ws) == 1}


def meta_model(model_class: type, config) -> nn.Module:
    """``model_class(config)`` on the meta device: what stock ``from_pretrained`` would build."""
    with torch.device("meta"):
        return model_class(copy.deepcopy(config))


def _tensor_shapes(state: dict) -> dict[str, tuple[int, ...]]:
    return {name: tuple(tensor.shape) for name, tensor in state.items()
            if isinstance(tensor, torch.Tensor)}  # int8 quantized modules also hold dtypes and packed params


def stock_config(model: nn.Module):
    """A copy of ``model.config`` with the FFN widths of uniformly pruned stacks written into it, if
    a stock model built from that copy has exactly ``model``'s parameter names and shapes; otherwise
    ``model.config`` unchanged (then only ``forgetless.load_model`` rebuilds the model)."""
    config = model.config
    keys = get_adapter(model).ffn_width_keys
    uniform = uniform_ffn_widths(model_shape(model))
    updates: dict[str, int] = {}
    for stack, width in uniform.items():
        key = keys.get(stack)
        if key is None or updates.get(key, width) != width:
            return config  # e.g. T5's one d_ff for two stacks of different widths
        updates[key] = width
    if not updates or len(uniform) < len(keys):
        return config
    candidate = copy.deepcopy(config)
    for key, width in updates.items():
        _set_dotted(candidate, key, width)
    try:
        stock = meta_model(type(model), candidate)
    except Exception:  # noqa: BLE001 - a config the class rejects is simply not a stock config
        return config
    if _tensor_shapes(stock.state_dict()) != _tensor_shapes(model.state_dict()):
        return config
    return candidate


def stock_loadable(model_dir: str | Path) -> tuple[bool, str]:
    """Whether stock ``from_pretrained`` rebuilds the saved model in ``model_dir`` exactly, and why not.

    Builds the class named in ``forgetless.json`` from ``config.json`` on the meta device and
    compares its per-site shape with the manifest and its parameter shapes with the tensors in
    ``model.safetensors``.
    """

    model_dir = Path(model_dir)
    manifest = read_manifest(model_dir)
    config = transformers.AutoConfig.from_pretrained(model_dir, trust_remote_code=trust_remote_code())
    try:
        stock = meta_model(transformers_model_class(manifest["model_class"]), config)
        stock_shape = json.loads(json.dumps(model_shape(stock)))
    except Exception as exc:  # noqa: BLE001 - whatever stops stock building it, stock loading fails too
        return False, f"building {manifest['model_class']} from config.json failed ({type(exc).__name__}: {exc})"
    saved = manifest["shape"]
    if stock_shape["layers"] != saved["layers"]:
        return False, f"config.json describes layers {stock_shape['layers']}, the weights have {saved['layers']}"
    if stock_shape["heads"] != saved["heads"]:
        return False, "attention heads were removed (config.json cannot describe a pruned head count)"
    if stock_shape["ffn"] != saved["ffn"]:
        return False, "FFN widths differ between layers or from config.json"
    expected = _tensor_shapes(stock.state_dict())
    with safe_open(str(model_dir / "model.safetensors"), framework="pt") as weights:
        for name in weights.keys():
            if expected.get(name) != tuple(weights.get_slice(name).get_shape()):
                return False, f"tensor {name} has no place of that shape in the stock model"
    return True, "config.json describes every layer exactly"
