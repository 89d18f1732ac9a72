"""One safetensors file written tensor by tensor, never held whole in memory (streamed calibration,
``methods/_shared/streamed.py``, writes each decoder layer as soon as it is compressed).

The safetensors format (https://github.com/huggingface/safetensors, "Format"): 8 bytes little-endian
header length N, N bytes of JSON header ``{name: {dtype, shape, data_offsets: [begin, end]}, …,
"__metadata__": {…}}`` padded with spaces to a multiple of 8, then the tensors' bytes back to back
(no holes). The header comes first but is known only at the end, so each tensor's bytes go to a
side file per element size as it arrives; ``close`` writes the header and copies the side files
after it in decreasing element size (8, 4, 2, 1 bytes), so every tensor starts at a multiple of its
element size, as ``safetensors.torch.save_file`` aligns them. Peak memory: one tensor.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import torch

DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
          torch.bool: "BOOL"}
COPY_CHUNK = 64 * 2 ** 20


class SafetensorsWriter:
    """``add(name, tensor)`` in any order, then ``close()`` writes ``path``; ``abort()`` removes the
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

    @property
    def names(self) -> list[str]:
        return [entry[0] for entries in self.entries.values() for entry in entries]

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
