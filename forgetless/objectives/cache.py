"""Per-training-set caches of the objectives on disk (teacher probabilities, difficulty losses, JTT
error sets; Du et al. §5: "teacher probabilities are computed once and stored with the training
set"): where they go (keyed by ``models.io.model_fingerprint``), and NumPy ``.npz`` files
(no pickle) written atomically."""
from __future__ import annotations

import io
import logging
import os
from pathlib import Path

import numpy as np

from ..fsutil import atomic_write_bytes, json_digest

log = logging.getLogger(__name__)


def cache_key(data: dict) -> str:
    """Short hash of what a cached result depends on (JSON, keys sorted)."""
    return json_digest(data)[:16]


def context_cache_dir(ctx) -> Path:
    """Where an objective caches its per-training-set columns: ``ctx.cache_dir`` if the context has
    one, else ``<work_dir>/cache``."""
    explicit = getattr(ctx, "cache_dir", None)
    return Path(explicit) if explicit else Path(ctx.work_dir) / "cache"


def atomic_save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> None:
    """``np.savez`` written atomically (an interrupted run leaves no partial cache file)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    atomic_write_bytes(path, buffer.getvalue())


def load_npz(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """Arrays of a cache file, or None when it is missing or unreadable (then it is recomputed)."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable cache %s: %s", path, exc)
        return None
