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
from torch import nn

from ..quantization.compressed_tensors import folder_format_version, read_schemes, stored_layout
from ..quantization.format import PACKED
from .adapters import get_adapter
from .checks import DTYPES, NOT_STOCK_WEIGHTS, WEIGHTS, tensor_header, trust_remote_code
from .expert_checkpoint import experts_scheme, stock_pieces
from .manifest import read_manifest, transformers_model_class
from .surgery import model_shape
from .transformers_compat import ZERO_POINT_MISMATCH, compressed_tensors_misreads, config_from_dict


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


def stock_model(model_class: type, config: dict) -> nn.Module:
    """What stock ``from_pretrained`` builds from the ``config.json`` dict ``config`` before it quantizes
    anything (``quantization_config`` left out), on the meta device."""
    plain = {k: v for k, v in config.items() if k != "quantization_config"}
    return meta_model(model_class, config_from_dict(model_class.config_class, plain))


def stock_tensors(stock: nn.Module, config: dict, header: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """``{name: (shape, dtype)}`` of the tensors stock ``from_pretrained`` fills in ``stock``
    (``stock_model``) from the ``config.json`` dict ``config``: every parameter and persistent buffer,
    floats in the config's dtype, tied parameters under each of their names (a file holds one of them);
    with a compressed-tensors ``quantization_config``, a quantized Linear's ``weight`` is replaced by
    what the format stores for it, and a fused expert weight by the packed per-expert pieces stock
    loading merges into it, where the file (``header``) holds them (``expert_checkpoint.py``)."""
    dtype = getattr(torch, str(config.get("dtype") or config.get("torch_dtype") or "float32").replace("torch.", ""))
    persistent = set(stock.state_dict())
    tensors = [*stock.named_parameters(remove_duplicate=False), *stock.named_buffers(remove_duplicate=False)]
    expected = {name: (tuple(t.shape), _dtype_name(dtype if t.is_floating_point() else t.dtype))
                for name, t in tensors if name in persistent}
    quantization = config.get("quantization_config")
    if quantization:
        for name, scheme in read_schemes(stock, quantization).items():
            rows, columns = expected.pop(f"{name}.weight")[0]
            expected.update(stored_layout(name, scheme, rows, columns, _dtype_name(dtype)))
        pieces_scheme = {"format": PACKED, "weights": experts_scheme(quantization)}
        for name, pieces in stock_pieces(stock, header).items():
            del expected[name]
            for piece, rows, columns in pieces:
                expected.update(stored_layout(piece, pieces_scheme, rows, columns, _dtype_name(dtype)))
    return expected


def tied_names(stock: nn.Module) -> list[set[str]]:
    """Groups of parameter names that are one tensor in the stock model (tied embeddings)."""
    groups: dict[int, set[str]] = {}
    for name, tensor in stock.named_parameters(remove_duplicate=False):
        groups.setdefault(id(tensor), set()).add(name)
    return [names for names in groups.values() if len(names) > 1]


# Measured with transformers 5.24 + compressed-tensors 0.20 (the experts bug); ASYMMETRIC_BUG: transformers_compat.
ASYMMETRIC_EXPERTS_BUG = ("transformers 5.24's converter that merges per-expert layers into the fused expert weights "
                          "(CompressedTensorsDequantize) drops their zero points, so stock from_pretrained raises "
                          "'Asymmetric quant requires zero-point values', with or without "
                          "CompressedTensorsConfig(dequantize=True)")
ASYMMETRIC_BUG = ("plain from_pretrained of asymmetric (zero-point) layers raises a size mismatch on "
                  f"weight_zero_point with transformers >= {ZERO_POINT_MISMATCH[0]} and compressed-tensors >= "
                  f"{ZERO_POINT_MISMATCH[1]} (older pairs load it), as for llm-compressor's own asymmetric output (the "
                  "packed zero points are expected unpacked)")


def _dtype_name(dtype: torch.dtype) -> str:
    """safetensors' name of a torch dtype (``F32``, ``BF16``, ``I8``, …)."""
    return DTYPES.get(dtype, str(dtype))


def stock_fit(model_class: type, config: dict, header: dict) -> tuple[str, str]:
    """What stock ``from_pretrained`` does with weights whose safetensors header is ``header``
    (``{name: (shape, dtype)}``) beside ``config.json`` ``config``, and why:

    * ``"exact"``: every tensor it fills is in the file with its shape and dtype, nothing else is;
    * ``"refused"``: it raises (a tensor of another shape: "size mismatch"; a config it cannot build);
    * ``"silent"``: it loads without an error but not these weights (a tensor missing: left at its
      random initial value; a tensor it does not know: ignored; another dtype: cast).
    """
    try:
        stock = stock_model(model_class, config)
        expected, tied = stock_tensors(stock, config, header), tied_names(stock)
    except Exception as exc:  # noqa: BLE001 - whatever stops stock building it, stock loading fails too
        return "refused", f"building {model_class.__name__} from config.json fails ({type(exc).__name__}: {exc})"
    mismatched = sorted(n for n, (shape, _) in header.items() if n in expected and expected[n][0] != shape)
    if mismatched:
        return "refused", (f"{mismatched[0]} has shape {list(header[mismatched[0]][0])}, config.json describes "
                           f"{list(expected[mismatched[0]][0])} (stock from_pretrained raises: size mismatch)")
    for names in tied:  # one name of a tied group in the file fills them all
        if names & set(header):
            expected = {n: v for n, v in expected.items() if n not in names or n in header}
    missing = sorted(set(expected) - set(header))
    unknown = sorted(set(header) - set(expected))
    recast = sorted(n for n, (_, dtype) in header.items() if n in expected and expected[n][1] != dtype)
    if missing:
        return "silent", f"{len(missing)} tensors stock needs are not in the file (e.g. {missing[0]})"
    if unknown:
        return "silent", f"{len(unknown)} tensors have no place in the stock model (e.g. {unknown[0]})"
    if recast:
        return "silent", f"{recast[0]} is {header[recast[0]][1]}, stock loads it as {expected[recast[0]][1]}"
    return "exact", "config.json describes every layer exactly"


def compressed_init_failure(model_class: type, model_dir: Path) -> str | None:
    """What stock ``from_pretrained`` of a compressed-tensors folder raises before reading any weight,
    replayed on the meta device (no memory): compressed-tensors replaces each quantized Linear's
    ``weight`` by its packed tensors, then transformers initialises the model, and some families'
    ``_init_weights`` read a Linear's ``weight`` by name (GPT-BigCode, AFMoE): an AttributeError.
    None when that passes or compressed-tensors is not installed (then nothing can be replayed)."""
    try:
        from compressed_tensors.compressors import ModelCompressor
        from compressed_tensors.quantization import apply_quantization_config
    except ImportError:
        return None
    config = transformers.AutoConfig.from_pretrained(model_dir, trust_remote_code=trust_remote_code())
    settings = transformers.CompressedTensorsConfig.from_dict(config.quantization_config)
    compressor = ModelCompressor.from_compression_config(settings)
    model = meta_model(model_class, config)
    try:
        apply_quantization_config(model, copy.deepcopy(compressor.quantization_config), run_compressed=False)
        compressor.compress_model(model=model)
        model.initialize_weights()
    except AttributeError as exc:  # a Linear's weight read by name: stock loading stops the same way
        return (f"stock from_pretrained raises before reading the weights ({type(exc).__name__}: {exc}): "
                f"transformers' {model_class.__name__} initialisation reads a quantized Linear's weight, which "
                "compressed-tensors replaced; load it with forgetless.load_model")
    except Exception:  # noqa: BLE001 - e.g. an int8 weight initialised here; stock loading skips the checkpoint's
        return None
    return None


def asymmetric_experts_failure(model_class: type, config: dict, header: dict) -> str | None:
    """Why stock ``from_pretrained`` of a compressed-tensors folder (``config.json`` ``config``, safetensors
    ``header``) fails on its experts: they are stored as asymmetric (zero-point) packed per-expert linears
    (``expert_checkpoint.stock_pieces``), which transformers' expert converter decompresses without their
    zero points (``ASYMMETRIC_EXPERTS_BUG``); None when the folder has no such experts."""
    quantization = config.get("quantization_config") or {}
    if (experts_scheme(quantization) or {}).get("symmetric", True):
        return None
    pieces = stock_pieces(stock_model(model_class, config), header)
    if not pieces:
        return None
    example = next(iter(pieces.values()))[0][0]
    return (f"its experts are stored as asymmetric (zero-point) int{experts_scheme(quantization)['num_bits']} layers, "
            f"one per expert (e.g. {example}), and {ASYMMETRIC_EXPERTS_BUG}")


def stock_loadable(model_dir: str | Path) -> tuple[bool, str]:
    """Whether stock ``from_pretrained`` rebuilds the saved model in ``model_dir`` exactly, and why
    not; a folder forgetless saved is never loaded silently wrong (``io.save_weights``), so
    False means stock loading raises. For the model card: True → "stock from_pretrained loads it
    exactly" (with the package the reason names, for compressed-tensors); False → "needs
    forgetless.load_model: <reason>".

    Builds the class named in ``forgetless.json`` from ``config.json`` on the meta device and
    compares its per-site shape with the manifest and its tensors with the weights file's header.
    """
    model_dir = Path(model_dir)
    manifest = read_manifest(model_dir)
    quantization = manifest.get("quantization") or {}
    if not (model_dir / WEIGHTS).is_file():
        why = ("int8 dynamic quantization (PyTorch's int8 Linears, activations quantized per batch) has no "
               "transformers format" if quantization.get("dtype") == "int8" else
               "stock from_pretrained would load these weights without an error but wrongly")
        return False, (f"{why}; the weights are stored as {NOT_STOCK_WEIGHTS}, so stock from_pretrained stops "
                       f"with 'no file named {WEIGHTS}'")
    config = json.loads((model_dir / "config.json").read_text())
    model_class = transformers_model_class(manifest["model_class"])
    try:
        stock = meta_model(model_class, transformers.AutoConfig.from_pretrained(
            model_dir, trust_remote_code=trust_remote_code()))
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
    header = tensor_header(model_dir / WEIGHTS)
    fit, why = stock_fit(model_class, config, header)
    if fit == "exact" and quantization.get("dtype") == "compressed-tensors":
        return _compressed_loadable(model_class, model_dir, config, header, quantization["scheme"], why)
    return fit == "exact", why


def _compressed_loadable(model_class: type, model_dir: Path, config: dict, header: dict, scheme: str,
                         why: str) -> tuple[bool, str]:
    """``stock_loadable`` of a compressed-tensors folder whose tensors (``header``) fit (``why``)."""
    groups = config["quantization_config"]["config_groups"]
    failure = compressed_tensors_misreads(groups) or \
        compressed_init_failure(model_class, model_dir) or \
        asymmetric_experts_failure(model_class, config, header)
    if failure:
        return False, failure
    why = (f"{why}; its {scheme} layers load with the compressed-tensors package installed "
           f"(pip install 'compressed-tensors>={folder_format_version(groups)}')")
    if any(not group["weights"]["symmetric"] and group["format"] == PACKED for group in groups.values()):
        why += (f"; {ASYMMETRIC_BUG}: load it with from_pretrained(path, "
                "quantization_config=transformers.CompressedTensorsConfig(dequantize=True))")
    return True, why
