"""A decoder-only language model read from its safetensors folder one layer at a time, and its
compressed weights written out the same way (streamed calibration, ``methods/_shared/streamed.py``).

``LayerStream(folder)`` builds the model's skeleton with its parameters on the meta device (no
memory: accelerate's ``init_empty_weights``; buffers such as rotary frequencies are real), then
reads what the capture pass runs before the first layer (the input embeddings, the other small
non-layer tensors; not the head, which only runs after the last layer) from the folder's safetensors
file(s). ``captured`` frees the input embeddings once every layer's inputs are captured, ``load`` reads one
layer's tensors (each file opened for that layer only, so no mapped page stays resident), ``release``
writes the compressed layer to ``model.safetensors`` through ``SafetensorsWriter`` and puts its
parameters back on the meta device; ``close`` copies the non-layer tensors from the folder one at a
time. Peak memory: the input embeddings and one layer during the capture pass, then one layer, its
compressed copy, the method's working set and the calibration activations; the model is never whole in
memory, on the CPU or on the ``device`` layers run on (a GPU when one is given), and neither are its
embeddings and head while layers are compressed.

Tensors are written under the names, and in the layout, the in-memory path writes
(``io.save_weights``): dense float weights, or compressed-tensors ``weight_packed`` /
``weight_scale`` / ``weight_shape`` (/ ``weight_zero_point``) for GPTQ-quantized Linears, ``int-quantized``
int8 ``weight`` / ``weight_scale`` for those whose inputs are quantized too (W8A8-INT8).
Supported: a stock or forgetless (unquantized) safetensors folder of any decoder-only causal LM of
transformers whose tensors are named as the model's own or as its family's checkpoint layout (what
``save_pretrained`` writes: renamed tensors, experts stored one per expert, read into the fused
parameters: ``expert_checkpoint.checkpoint_sources``); anything else is one ``UnsupportedModelError``
before any work. Quantized experts are written as ``io.save_weights`` writes them (per-expert packed
pieces where the layout splits them). Weights are read into the skeleton's dtype, the one
``config.json`` gives (as ``from_pretrained`` and ``load_model`` build the model): a float16 folder is
compressed and written in float16.
"""
from __future__ import annotations

import ctypes
import dataclasses
import gc
import json
import os
import shutil
import struct
from pathlib import Path

import torch
import transformers
from safetensors import safe_open
from torch import nn

from ..errors import UnsupportedModelError
from ..quantization.compressed_tensors import grouped_storage, module_scheme
from ..quantization.compressed_tensors import stored_tensors as stored_linear
from ..quantization.inputs import INPUT_ATTR, quantize_inputs
from ..quantization.layers import GROUPED_ATTR, grouped_modules
from .adapters import get_adapter
from .blocks import is_causal_lm
from .checks import DTYPES, check_model_folder, stored_tensors, weight_files
from .expert_checkpoint import assemble, checkpoint_pieces, checkpoint_sources, packed_experts
from .experts import EXPERT_CODES
from .io import _plain_tensors
from .manifest import is_forgetless_folder, read_manifest, transformers_model_class
from .surgery import reshape_like

COPY_CHUNK = 64 * 2 ** 20


def empty_model(folder: Path, config) -> nn.Module:
    """The folder's causal LM with meta parameters (and real buffers), reshaped as a forgetless
    manifest records."""
    from accelerate import init_empty_weights

    manifest = read_manifest(folder) if is_forgetless_folder(folder) else None
    if manifest is not None and manifest.get("quantization"):
        raise UnsupportedModelError(f"{folder}: holds {manifest['quantization']['dtype']} weights; streamed "
                                    "calibration reads float weights only")
    with init_empty_weights():
        try:
            if manifest is not None:
                model = transformers_model_class(manifest["model_class"])._from_config(config)  # its dtype
                reshape_like(model, manifest["shape"])
            else:
                model = transformers.AutoModelForCausalLM.from_config(config)
        except ValueError as exc:
            raise UnsupportedModelError(f"{folder}: streamed calibration needs a decoder-only causal LM "
                                        f"({str(exc).splitlines()[0][:150]})") from exc
    model.tie_weights()  # as a model built without empty weights ties them (the head saved once)
    if not is_causal_lm(model):
        raise UnsupportedModelError(f"{folder}: a {type(model).__name__}; streamed calibration compresses "
                                    "decoder-only causal LMs (…ForCausalLM) only")
    return model


def _set_tensor(root: nn.Module, name: str, value: torch.Tensor) -> None:
    owner_name, _, attr = name.rpartition(".")
    owner = root.get_submodule(owner_name) if owner_name else root
    if attr in owner._parameters:
        owner._parameters[attr] = nn.Parameter(value, requires_grad=False)
    else:
        owner._buffers[attr] = value


class LayerStream:
    """The skeleton of the model in ``folder`` (``.model``) with its non-layer tensors on ``device``;
    a ``sequential.LayerSource`` that loads each decoder layer from the folder and writes it,
    compressed, into ``out`` (a folder: ``model.safetensors`` there on ``close``)."""

    def __init__(self, folder: str | Path, device: str = "cpu"):
        self.folder = Path(folder)
        self.config = check_model_folder(self.folder)
        self.model = empty_model(self.folder, self.config)
        self.device = torch.device(device)
        self.layers = get_adapter(self.model).stacks(self.model)["decoder"]
        modules = {id(m): name for name, m in self.model.named_modules()}
        self.prefix = modules[id(self.layers)] + "."
        self.names = list(_plain_tensors(self.model))  # the in-memory path's tensor names (tied ones once)
        tied: dict[int, list[str]] = {}
        for name, parameter in self.model.named_parameters(remove_duplicate=False):
            if not name.startswith(self.prefix):
                tied.setdefault(id(parameter), []).append(name)
        self.tied = [names for names in tied.values() if len(names) > 1]  # the head sharing the embeddings
        files = {name: file for name, (_, _, file) in stored_tensors(weight_files(self.folder)).items()}
        self.stored, self.assembled = checkpoint_sources(self.model, self.names, set(files), self.tied)
        self.files = {name: files[stored] for name, stored in self.stored.items()}
        self.piece_files = {p.name: files[p.name] for pieces in self.assembled.values() for p in pieces}
        self.pieces = checkpoint_pieces(self.model)  # where quantized experts are written
        missing = [name for name in self.names if name not in self.files and name not in self.assembled]
        if missing:
            raise UnsupportedModelError(f"{self.folder}: its weights lack {', '.join(missing[:3])} (tensor names "
                                        "other than the model's own are not read by streamed calibration)")
        self.dtypes = {name: t.dtype for name, t in _plain_tensors(self.model).items()}
        self.outside = [name for name in self.names if not name.startswith(self.prefix)]  # embeddings, norm, head
        self.embeddings = _weight_names(self.model, self.model.get_input_embeddings(), self.outside)
        self.head = [name for name in _weight_names(self.model, self.model.get_output_embeddings(), self.outside)
                     if name not in self.embeddings]  # none when tied to the embeddings
        self.writer: SafetensorsWriter | None = None
        self.quantized: dict[str, dict] = {}  # module name → compressed-tensors weights args
        self.storage = {"weights": 0, "bytes": 0}
        self.on_release = None  # called with the layer before it is written (the method's measurements)

    def _read(self, names: list[str]) -> None:
        """Read ``names`` from the folder into the skeleton (cast to its dtype), each file opened once."""
        by_file: dict[Path, list[str]] = {}
        for name in names:
            if name in self.assembled:
                self._assemble(name)
                continue
            by_file.setdefault(self.files[name], []).append(name)
        for file, inside in by_file.items():
            with safe_open(str(file), framework="pt") as handle:
                for name in inside:
                    tensor = handle.get_tensor(self.stored[name]).to(self.dtypes[name])
                    _set_tensor(self.model, name, tensor.to(self.device))

    def _tensor(self, name: str) -> torch.Tensor:
        """Tensor ``name`` read from the folder on the CPU, in the skeleton's dtype (not set in the model)."""
        with safe_open(str(self.files[name]), framework="pt") as handle:
            return handle.get_tensor(self.stored[name]).to(self.dtypes[name])

    def _assemble(self, name: str) -> None:
        """A fused expert weight from the folder's per-expert pieces."""
        def read(piece: str) -> torch.Tensor:
            with safe_open(str(self.piece_files[piece]), framework="pt") as handle:
                return handle.get_tensor(piece)

        tensor = assemble(self.model, name, self.assembled[name], read).to(self.dtypes[name])
        _set_tensor(self.model, name, tensor.to(self.device))

    def _layer_names(self, index: int) -> list[str]:
        start = f"{self.prefix}{index}."
        return [name for name in self.names if name.startswith(start)]

    # ----- sequential.LayerSource ---------------------------------------------------------------------
    def start(self, out: Path) -> None:
        """Read the non-layer tensors the capture pass runs onto the device (all but an untied head) and
        open ``out/model.safetensors`` (the non-layer tensors join it on ``close``)."""
        for name, buffer in list(self.model.named_buffers()):  # non-persistent ones (rotary frequencies)
            if not buffer.is_meta:
                _set_tensor(self.model, name, buffer.to(self.device))
        self._read([name for name in self.outside if name not in self.head])
        self.writer = SafetensorsWriter(Path(out) / "model.safetensors", metadata={"format": "pt"})

    def captured(self, stack: str) -> None:
        """Every layer's inputs are captured: the input embeddings (a tied head with them) go back to the
        meta device; ``close`` copies them from the folder."""
        for name in self.embeddings:
            _set_tensor(self.model, name, torch.empty_like(self.model.get_parameter(name), device="meta"))
        self.model.tie_weights()  # a head tied to the embeddings shares the meta tensor again
        release_memory()

    def load(self, stack: str, index: int, layer: nn.Module) -> None:
        self._read(self._layer_names(index))

    def release(self, stack: str, index: int, layer: nn.Module) -> None:
        if self.on_release is not None:
            self.on_release(layer)
        prefix = f"{self.prefix}{index}."
        experts, replaced = packed_experts(layer, self.pieces, prefix)  # per-expert packed pieces
        modules, grouped = dict(layer.named_modules()), grouped_modules(layer)
        linears = {prefix + name: q for name, q in grouped.items()}
        schemes = {prefix + name: module_scheme(modules[name], q) for name, q in grouped.items()}
        dropped = {*replaced, *(f"{name}.weight" for name in linears)}
        tensors = {name: t for name, t in _plain_tensors(layer).items() if prefix + name not in dropped}
        for module in {name.rsplit(".", 1)[0] for name in replaced} if experts else ():  # named in the config
            self.quantized[module] = next(iter(experts.values())).weights_args()
        self.quantized.update(schemes)
        self._write_codes(experts)
        self._write_codes(linears, schemes, {prefix + name: module for name, module in modules.items()})
        for name, tensor in tensors.items():
            self.writer.add(prefix + name, tensor)
        for module in layer.modules():
            if getattr(module, INPUT_ATTR, None) is not None:
                quantize_inputs(module, None)  # the quantized inputs' hook (W8A8)
            for attribute in (GROUPED_ATTR, EXPERT_CODES, INPUT_ATTR):
                if hasattr(module, attribute):
                    delattr(module, attribute)
        for name, tensor in list(_plain_tensors(layer).items()):
            _set_tensor(layer, name, torch.empty_like(tensor, device="meta"))
        release_memory()

    def _write_codes(self, codes: dict, schemes: dict | None = None, modules: dict | None = None) -> None:
        """Integer codes (``{module name: codes}``: quantized linears, or experts' pieces) on the CPU into the
        file, as ``io.save_weights`` stores them: in each linear's compressed-tensors scheme (``schemes``, as
        ``compressed_tensors.module_scheme`` gives it; ``modules``: the linears by name, whose static input
        scales join them), else packed (``pack_int32``); their weights and bytes counted."""
        codes = {name: dataclasses.replace(q, codes=q.codes.cpu(), scales=q.scales.cpu(), zeros=q.zeros.cpu())
                 for name, q in codes.items()}
        storage = grouped_storage(codes)
        self.storage["weights"] += storage["weights"]
        self.storage["bytes"] += storage["bytes"]
        for name, q in codes.items():
            stored = q.stored(name) if schemes is None else stored_linear(name, q, schemes[name], modules[name])
            for key, tensor in stored.items():
                self.writer.add(key, tensor)

    def close(self) -> None:
        """Write the non-layer tensors, copied from the folder one at a time, and the file. A tensor tied to
        others (a head sharing the embeddings) goes under the name the in-memory path gives it
        (``io.save_weights``): the first module's in the model's order, the input embedding's,
        which vLLM loads for a tied model."""
        for name in self.outside:
            self.writer.add(name, self._tensor(name))
        self.writer.close()

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.abort()


def _weight_names(model: nn.Module, module: nn.Module | None, names: list[str]) -> list[str]:
    """Those of ``names`` (the model's tensors, tied ones once) that are ``module``'s own parameters."""
    owned = {id(parameter) for parameter in module.parameters(recurse=False)} if module is not None else set()
    parameters = dict(model.named_parameters())  # tied ones once, under the first name
    return [name for name in names if name in parameters and id(parameters[name]) in owned]


def release_memory() -> None:
    """Free what the finished layer left: its statistics and hooks sit in reference cycles among
    young objects (collected now, not at the next automatic collection; the young generations
    only: a full collection of the process costs ~0.5 s a layer), and glibc keeps freed blocks below
    its (dynamic) mmap threshold in the heap unless asked to give them back (``malloc_trim``;
    elsewhere a no-op)."""
    gc.collect(1)
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


class SafetensorsWriter:
    """One safetensors file written tensor by tensor, never held whole in memory (``LayerStream``
    writes each decoder layer as soon as it is compressed).

    The safetensors format (https://github.com/huggingface/safetensors, "Format"): 8 bytes little-endian
    header length N, N bytes of JSON header ``{name: {dtype, shape, data_offsets: [begin, end]}, …,
    "__metadata__": {…}}`` padded with spaces to a multiple of 8, then the tensors' bytes back to back
    (no holes). The header comes first but is known only at the end, so each tensor's bytes go to a
    side file per element size as it arrives; ``close`` writes the header and copies the side files
    after it in decreasing element size (8, 4, 2, 1 bytes), so every tensor starts at a multiple of its
    element size, as ``safetensors.torch.save_file`` aligns them. Peak memory: one tensor.

    ``add(name, tensor)`` in any order, then ``close()`` writes ``path``; ``abort()`` removes the
    side files (``path`` is never written on failure)."""

    def __init__(self, path: str | os.PathLike, metadata: dict[str, str] | None = None):
        self.path = Path(path)
        self.metadata = metadata or {}
        # element size → [(name, dtype, shape, bytes)] in the order written
        self.entries: dict[int, list[tuple[str, str, list[int], int]]] = {}
        self.sides: dict[int, object] = {}

    def add(self, name: str, tensor: torch.Tensor) -> None:
        if any(name == entry[0] for entries in self.entries.values() for entry in entries):
            raise ValueError(f"{self.path.name}: tensor {name} written twice")
        if tensor.dtype not in DTYPES:
            raise ValueError(f"{name}: dtype {tensor.dtype} has no safetensors name")
        tensor = tensor.detach().to("cpu").contiguous()
        size = tensor.element_size()
        if size not in self.sides:
            self.sides[size] = open(self._side(size), "wb")  # noqa: SIM115 - closed in close / abort
        data = tensor.reshape(-1).view(torch.uint8).numpy()  # a view: written without a copy
        self.sides[size].write(data)
        self.entries.setdefault(size, []).append((name, DTYPES[tensor.dtype], list(tensor.shape), data.size))

    def close(self) -> int:
        """Write the file; returns its size in bytes."""
        header: dict[str, object] = {"__metadata__": self.metadata} if self.metadata else {}
        offset = 0
        for size in sorted(self.entries, reverse=True):
            for name, dtype, shape, nbytes in self.entries[size]:
                header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
                offset += nbytes
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        for side in self.sides.values():
            side.close()
        try:
            with open(self.path, "wb") as out:
                out.write(struct.pack("<Q", len(text)))
                out.write(text)
                for size in sorted(self.entries, reverse=True):
                    with open(self._side(size), "rb") as side:
                        shutil.copyfileobj(side, out, COPY_CHUNK)
        finally:
            self._remove_sides()
        return self.path.stat().st_size

    def abort(self) -> None:
        for side in self.sides.values():
            side.close()
        self._remove_sides()

    def _side(self, size: int) -> Path:
        return self.path.with_name(f".{self.path.name}.{size}-byte")

    def _remove_sides(self) -> None:
        for size in self.sides:
            self._side(size).unlink(missing_ok=True)
