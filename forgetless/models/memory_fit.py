"""What fits in this machine's memory, decided from the memory available and the model's size rather
than fixed numbers: whether a causal LM can be compressed in memory (``check_in_memory_fits``, before
any work of a ``compress`` run) and how many rows one evaluation forward may hold
(``eval_batch_size``).

In memory, ``compress`` holds the base (kept to compare with) and the student it compresses: two
copies of the weights, plus the method's working set (calibration activations, a layer's Hessians),
counted as half a copy more (``IN_MEMORY_COPIES``; on Qwen2.5-Coder-1.5B, 7.1 GB of fp32 weights, the
measured figures are in ``docs/offline-models.md``). Streamed calibration (``forgetless.apply_streamed``)
holds one decoder layer at a time, so a model that does not fit is refused with that advice.

An evaluation forward of ``batch_size`` rows holds ``batch_size × ROW_TOKENS`` tokens
(``llm/scoring.py``); per token, inference keeps one layer's activations (the residual stream, the
attention's projections, the MLP's intermediate) and the cached keys and values of every layer.
``eval_batch_size`` caps the requested batch so that those estimates, doubled for the allocator and
attention scores, fit in half of the memory available when evaluation starts; the card records the
batch size used and why (``zero_shot.batch_size`` and ``zero_shot.batch_size_from_memory``).
"""
from __future__ import annotations

from pathlib import Path

from ..errors import MemoryTooSmallError

GIB = 2 ** 30
IN_MEMORY_COPIES = 2.5  # base + student + the method's working set, in weights' worth (module docstring)
HEADROOM = 2  # the per-token activation estimate doubled: allocator slack, attention scores
EVAL_SHARE = 0.5  # the share of the available memory evaluation activations may use


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``MemAvailable`` of ``/proc/meminfo``); None
    where there is no ``/proc``."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def weight_bytes(folder: str | Path) -> int | None:
    """Bytes of the safetensors weights in a local model folder; None for anything else."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    files = list(folder.glob("*.safetensors"))
    return sum(f.stat().st_size for f in files) if files else None


def check_in_memory_fits(model: str, method: str | list[str]) -> None:
    """``MemoryTooSmallError`` before any work when compressing the causal LM ``model`` (a folder or an
    offline LLM's name) with ``method`` (a method or scheme name, or a stack's method names) in memory needs
    more than the memory available; it says to stream (``forgetless.apply_streamed``: one layer in memory at
    a time)."""
    from .loading import resolve_model_path

    available = available_memory()
    weights = weight_bytes(resolve_model_path(model))
    if available is None or weights is None:
        return
    needed = int(IN_MEMORY_COPIES * weights)
    if needed > available:
        raise MemoryTooSmallError(
            f"--model {model}: compressing in memory needs about {needed / GIB:.1f} GiB ({IN_MEMORY_COPIES:g} × "
            f"{weights / GIB:.1f} GiB of weights: the base, the student and the method's working set), "
            f"{available / GIB:.1f} GiB available; stream it layer by layer instead: "
            f"forgetless.apply_streamed({model!r}, {method!r}, calibration=..., out_dir=...) (one-shot methods), "
            "then forgetless.evaluate the folder")


def row_bytes(config, row_tokens: int) -> int:
    """An estimate of the memory one evaluation row of ``row_tokens`` tokens holds in a forward of the
    decoder described by ``config`` (fp32): one layer's activations and every layer's keys and values."""
    hidden = config.hidden_size
    intermediate = getattr(config, "intermediate_size", None) or 4 * hidden
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    per_token = 6 * hidden + 3 * intermediate + config.num_hidden_layers * 2 * kv_heads * head_dim
    return HEADROOM * 4 * per_token * row_tokens


def eval_batch_size(model, requested: int, row_tokens: int) -> tuple[int, dict]:
    """``(batch_size, why)``: the requested evaluation batch size, lowered to what fits in
    ``EVAL_SHARE`` of the available memory by ``row_bytes``; ``why`` is recorded on the card."""
    available = available_memory()
    config = getattr(model, "config", None)
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    try:
        per_row = row_bytes(config, row_tokens)
    except (AttributeError, TypeError):  # not a decoder config this estimate reads
        return requested, {"requested": requested, "estimated": False}
    if available is None:
        return requested, {"requested": requested, "estimated": False}
    fits = max(1, int(EVAL_SHARE * available // per_row))
    return min(requested, fits), {"requested": requested, "fits_in_memory": fits,
                                  "available_gib": round(available / GIB, 1),
                                  "row_mib": round(per_row / 2 ** 20, 1)}
