"""Ship a compressed model outside forgetless: ONNX export checked against PyTorch, and hub upload.

``export_onnx`` uses ``torch.onnx.export(dynamo=True)`` (the ``torch.export`` based exporter; needs
``onnxscript``), with dynamic batch and sequence axes, then runs every exported graph with
onnxruntime on two sample batches of different shapes and compares with PyTorch:

* encoder classifier → ``model.onnx``: ``input_ids, attention_mask[, token_type_ids] → logits``;
* encoder-decoder → ``encoder.onnx``: ``input_ids, attention_mask → last_hidden_state`` and
  ``decoder.onnx``: ``decoder_input_ids, encoder_hidden_states, attention_mask → logits`` (logits for
  every decoder position, no KV cache: each generation step reruns the decoder on the whole
  prefix). Without a cache the graphs have no cache-object inputs, whose layout changes between
  transformers versions; the cost is quadratic decoding, acceptable for short outputs.
  ``onnx_greedy_generate`` decodes greedily with the two graphs.

onnxruntime sessions are created with ``intra_op_num_threads`` set and thread spinning off: a
spinning ORT pool in the same process starves PyTorch's threads and collapses its timings.
"""
from __future__ import annotations

import inspect
import json
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import torch
from torch import nn

from .data.hub import hub_offline
from .errors import ConfigError, ForgetlessError, UnsupportedModelError
from .fsutil import atomic_directory
from .models.io import is_forgetless_folder, load_model
from .outputs import check_output, mark_output
from .ranges import MAX_OPSET, check_number

DEFAULT_OPSET = 18
DEFAULT_ATOL = 1e-4
HUB_TIMEOUT_S = 5.0  # connection check before an upload: fail fast instead of hanging offline


# ----- onnxruntime ------------------------------------------------------------------------------
def ort_session(path: str | Path, threads: int = 1):
    """An onnxruntime CPU session with ``threads`` intra-op threads and no thread spinning."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def max_abs_difference(expected: torch.Tensor, actual: np.ndarray) -> float:
    """Largest absolute elementwise difference; a shape mismatch is an error, not a number."""
    expected = expected.detach().cpu().numpy()
    if expected.shape != actual.shape:
        raise ForgetlessError(f"ONNX output has shape {actual.shape}, PyTorch {expected.shape}")
    return float(np.abs(expected.astype(np.float64) - actual.astype(np.float64)).max(initial=0.0))


# ----- wrappers: plain tensor in, plain tensor out ------------------------------------------------
class _Classifier(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        extra = {} if token_type_ids is None else {"token_type_ids": token_type_ids}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits


class _Encoder(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.encoder = model.get_encoder()

    def forward(self, input_ids, attention_mask):
        return self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class _DecoderStep(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, decoder_input_ids, encoder_hidden_states, attention_mask):
        return self.model(encoder_outputs=(encoder_hidden_states,), attention_mask=attention_mask,
                          decoder_input_ids=decoder_input_ids, use_cache=False).logits


# ----- sample inputs -----------------------------------------------------------------------------
def _token_ids(model: nn.Module, batch: int, length: int, generator: torch.Generator) -> torch.Tensor:
    vocab = int(getattr(model.config, "vocab_size", None) or model.config.decoder.vocab_size)
    return torch.randint(min(5, vocab - 1), vocab, (batch, length), generator=generator)


def sample_batches(model: nn.Module, seed: int = 0) -> list[dict[str, torch.Tensor]]:
    """Two seeded batches of different shapes (batch 2 × 9, batch 3 × 6) with padding in one row;
    the second exercises the dynamic axes."""
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for batch, length in ((2, 9), (3, 6)):
        ids = _token_ids(model, batch, length, generator)
        mask = torch.ones_like(ids)
        mask[-1, length - 3:] = 0
        batches.append({"input_ids": ids, "attention_mask": mask,
                        "token_type_ids": torch.zeros_like(ids),
                        "decoder_input_ids": _token_ids(model, batch, length // 2 + 1, generator)})
    return batches


# ----- export ------------------------------------------------------------------------------------
def _export(module: nn.Module, args: tuple, names: list[str], output: str, axes: dict[str, dict[int, str]],
            path: Path, opset: int) -> None:
    dims: dict[str, torch.export.Dim] = {}
    dynamic = {name: {axis: dims.setdefault(label, torch.export.Dim(label, min=1)) for axis, label in axes[name].items()}
               for name in names}  # keys: the wrapper's forward argument names
    big = sum(p.numel() * p.element_size() for p in module.parameters()) > 1_500_000_000
    try:
        torch.onnx.export(module.eval(), args, str(path), dynamo=True, input_names=names, output_names=[output],
                          dynamic_shapes=dynamic, opset_version=opset, external_data=big, verbose=False)
    except ImportError as exc:
        raise ForgetlessError(f"ONNX export needs onnx and onnxscript: pip install onnx onnxscript ({exc})") from exc
    except Exception as exc:  # noqa: BLE001 - torch.export / ONNX translation errors are long; name the graph
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in str(exc).splitlines() if line.strip()]
        summary = next((line for line in lines if line.startswith("<class")), lines[0] if lines else repr(exc))
        raise UnsupportedModelError(f"torch.onnx.export (dynamo) could not export {path.name} of "
                                    f"{type(getattr(module, 'model', module)).__name__}: {summary}") from exc


def _check(session, feeds: dict[str, torch.Tensor], expected: torch.Tensor, graph: str, atol: float) -> float:
    actual = session.run(None, {name: tensor.numpy() for name, tensor in feeds.items()})[0]
    diff = max_abs_difference(expected, actual)
    if not diff <= atol:
        raise ForgetlessError(f"ONNX {graph} differs from PyTorch by {diff:.3g} (max abs), above the tolerance {atol:g}")
    return diff


def export_onnx(model_dir_or_model, out_dir: str | Path, opset: int = DEFAULT_OPSET, atol: float = DEFAULT_ATOL,
                threads: int = 1, seed: int = 0, overwrite: bool = False) -> dict:
    """Export an encoder classifier (one graph) or encoder-decoder (encoder + decoder step) to ONNX in
    ``out_dir`` (written atomically, with ``config.json``, the tokenizer when known and
    ``export.json``), check it with onnxruntime against PyTorch on two sample batches of different
    shapes, and return ``{"kind", "files", "inputs", "max_abs_diff", "per_graph", "opset", "atol"}``.

    A difference above ``atol`` is a ``ForgetlessError`` naming the graph and the difference.
    ``out_dir`` follows the output rule (``outputs.check_output``): new, empty, or an earlier
    export's folder with ``overwrite`` (moved aside, then replaced); never the model or any other folder."""
    check_number("--opset", opset, 18, MAX_OPSET, integer=True)  # dynamo writes opset 18 or later
    check_number("--atol", atol, 0, None)
    path = None if isinstance(model_dir_or_model, nn.Module) else model_dir_or_model
    out_dir = check_output(out_dir, command="export", inputs={"MODEL_PATH": path}, overwrite=overwrite)
    if path is not None and not is_forgetless_folder(path):
        raise ConfigError(f"{Path(path)}: not a model folder written by forgetless (no forgetless.json); "
                          "pass a forgetless model folder or a loaded model")
    model, tokenizer = (model_dir_or_model.eval(), None) if path is None else load_model(path)
    if any(type(m).__module__.startswith("torch.ao.nn.quantized") or "quantized" in type(m).__module__
           for m in model.modules()):
        raise UnsupportedModelError(f"{path or type(model).__name__}: an int8-quantized model; ONNX export "
                                    "takes float models (export the model before --then quantize)")
    config = model.config
    out_dir = Path(out_dir)
    batches = sample_batches(model, seed)
    seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    if not seq2seq and not type(model).__name__.endswith("ForSequenceClassification"):
        raise UnsupportedModelError(f"ONNX export supports sequence classifiers and encoder-decoder models, "
                                    f"not {type(model).__name__}")
    with atomic_directory(out_dir) as tmp, torch.no_grad():
        if seq2seq:
            result = _export_seq2seq(model, batches, tmp, opset, atol, threads)
        else:
            result = _export_classifier(model, batches, tmp, opset, atol, threads)
        config.save_pretrained(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp)
        result.update(opset=_written_opset(tmp / next(iter(result["files"].values()))), requested_opset=opset,
                      atol=atol, source=str(Path(path)) if path else None, max_abs_diff=max(result["per_graph"].values()))
        (tmp / "export.json").write_text(json.dumps(result, indent=2) + "\n")
        (tmp / "README.md").write_text(onnx_readme(result, seq2seq, tokenizer is not None))
        mark_output(tmp, "export")
    result["files"] = {name: str(out_dir / file) for name, file in result["files"].items()}
    return result


def _written_opset(path: Path) -> int:
    """The default-domain opset the exporter actually wrote (it may raise a lower request)."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False)
    return int(next((o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")), 0))


def _export_classifier(model, batches, tmp: Path, opset: int, atol: float, threads: int) -> dict:
    accepted = inspect.signature(model.forward).parameters
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if "token_type_ids" in accepted else [])
    axes = {name: {0: "batch", 1: "sequence"} for name in names}
    _export(_Classifier(model), tuple(batches[0][n] for n in names), names, "logits", axes,
            tmp / "model.onnx", opset)
    session = ort_session(tmp / "model.onnx", threads)
    diff = max(_check(session, {n: b[n] for n in names}, model(**{n: b[n] for n in names}).logits, "model", atol)
               for b in batches)
    return {"kind": "classifier", "files": {"model": "model.onnx"}, "inputs": {"model": names},
            "per_graph": {"model": diff}}


def _export_seq2seq(model, batches, tmp: Path, opset: int, atol: float, threads: int) -> dict:
    encoder, decoder = _Encoder(model).eval(), _DecoderStep(model).eval()
    first = batches[0]
    enc_names = ["input_ids", "attention_mask"]
    dec_names = ["decoder_input_ids", "encoder_hidden_states", "attention_mask"]
    _export(encoder, (first["input_ids"], first["attention_mask"]), enc_names, "last_hidden_state",
            {n: {0: "batch", 1: "source"} for n in enc_names}, tmp / "encoder.onnx", opset)
    hidden = encoder(first["input_ids"], first["attention_mask"])
    _export(decoder, (first["decoder_input_ids"], hidden, first["attention_mask"]), dec_names, "logits",
            {"decoder_input_ids": {0: "batch", 1: "target"}, "encoder_hidden_states": {0: "batch", 1: "source"},
             "attention_mask": {0: "batch", 1: "source"}}, tmp / "decoder.onnx", opset)
    enc_session, dec_session = ort_session(tmp / "encoder.onnx", threads), ort_session(tmp / "decoder.onnx", threads)
    diffs = {"encoder": 0.0, "decoder": 0.0}
    for b in batches:
        hidden = encoder(b["input_ids"], b["attention_mask"])
        diffs["encoder"] = max(diffs["encoder"], _check(enc_session, {n: b[n] for n in enc_names}, hidden,
                                                        "encoder", atol))
        feeds = {"decoder_input_ids": b["decoder_input_ids"], "encoder_hidden_states": hidden,
                 "attention_mask": b["attention_mask"]}
        diffs["decoder"] = max(diffs["decoder"], _check(dec_session, feeds, decoder(**feeds), "decoder", atol))
    return {"kind": "seq2seq", "files": {"encoder": "encoder.onnx", "decoder": "decoder.onnx"},
            "inputs": {"encoder": enc_names, "decoder": dec_names}, "per_graph": diffs}


def onnx_greedy_generate(encoder_session, decoder_session, input_ids: np.ndarray, attention_mask: np.ndarray,
                         decoder_start_token_id: int, eos_token_id: int | None, max_new_tokens: int,
                         pad_token_id: int = 0) -> np.ndarray:
    """Greedy decoding with the exported encoder and decoder-step graphs (no cache: the decoder
    reruns on the whole prefix each step). Returns ``(batch, 1 + generated)`` token ids starting with
    ``decoder_start_token_id``; finished rows are padded with ``pad_token_id``."""
    mask = attention_mask.astype(np.int64)
    hidden = encoder_session.run(None, {"input_ids": input_ids.astype(np.int64), "attention_mask": mask})[0]
    tokens = np.full((input_ids.shape[0], 1), decoder_start_token_id, dtype=np.int64)
    done = np.zeros(input_ids.shape[0], dtype=bool)
    for _ in range(max_new_tokens):
        logits = decoder_session.run(None, {"decoder_input_ids": tokens, "encoder_hidden_states": hidden,
                                            "attention_mask": mask})[0]
        step = np.where(done, pad_token_id, logits[:, -1].argmax(-1))
        tokens = np.concatenate([tokens, step[:, None]], axis=1)
        if eos_token_id is not None:
            done |= step == eos_token_id
            if done.all():
                break
    return tokens


# ----- hub ---------------------------------------------------------------------------------------
def push_to_hub(model_dir: str | Path, repo_id: str, token: str | None = None, private: bool = True) -> str:
    """Upload a saved model folder (weights, config, tokenizer, ``forgetless.json``, model card) to
    the Hugging Face hub as ``repo_id``; returns the commit URL. Offline (``HF_HUB_OFFLINE=1``) or
    when the hub cannot be reached within ``HUB_TIMEOUT_S`` seconds, a ``ForgetlessError``."""
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import HfHubHTTPError

    model_dir = Path(model_dir)
    if not is_forgetless_folder(model_dir):
        raise ConfigError(f"{model_dir}: not a model folder written by forgetless (no forgetless.json)")
    if constants.HF_HUB_OFFLINE or hub_offline():
        raise ForgetlessError(f"cannot push {model_dir} to {repo_id!r}: HF_HUB_OFFLINE is set (unset it to upload)")
    endpoint = urlparse(constants.ENDPOINT)
    host, port = endpoint.hostname, endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=HUB_TIMEOUT_S).close()
    except OSError as exc:
        raise ForgetlessError(f"cannot push {model_dir} to {repo_id!r}: the hub at {constants.ENDPOINT} is not "
                              f"reachable ({exc}); check the network or HF_ENDPOINT") from exc
    api = HfApi(token=token)
    try:
        api.create_repo(repo_id, private=private, exist_ok=True)
        commit = api.upload_folder(folder_path=str(model_dir), repo_id=repo_id,
                                   commit_message="Upload model compressed with forgetless")
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise ForgetlessError(f"cannot push {model_dir} to {repo_id!r}: {exc}") from exc
    return str(getattr(commit, "commit_url", commit))


def onnx_readme(result: dict, seq2seq: bool, has_tokenizer: bool) -> str:
    """The export's own README: what was exported, how it was checked, and an onnxruntime snippet."""
    files = ", ".join(f"`{Path(f).name}` ({name})" for name, f in result["files"].items())
    lines = ["# ONNX export (forgetless)", "", f"Graphs: {files}; opset {result['opset']}; dynamic batch and sequence "
             f"axes. Checked with onnxruntime against PyTorch on two batches of different shapes: largest |difference| "
             f"{result['max_abs_diff']:.2e} (tolerance {result['atol']:g}).", ""]
    if seq2seq:
        lines += ["Encoder-decoder: run the encoder graph once, then the decoder graph step by step (greedy decoding); "
                  "`forgetless.export.onnx_greedy_generate` does exactly that.", ""]
        return "\n".join(lines)
    graph = Path(next(iter(result["files"].values()))).name
    lines += ["```python", "import numpy as np, onnxruntime, transformers", "",
              f'session = onnxruntime.InferenceSession("path/to/this/folder/{graph}")',
              'tokenizer = transformers.AutoTokenizer.from_pretrained("path/to/this/folder", trust_remote_code=False)'
              if has_tokenizer else "tokenizer = ...  # the tokenizer of the exported model (none was saved here)",
              'batch = tokenizer(["a sentence to classify"], return_tensors="np")',
              "names = {i.name for i in session.get_inputs()}",
              "logits = session.run(None, {k: v.astype(np.int64) for k, v in batch.items() if k in names})[0]",
              "print(logits.argmax(-1))", "```", ""]
    return "\n".join(lines)
