"""Inference speed of base vs compressed model, measured side by side in one run.

Both models see the same inputs; repeats alternate between the two so drift in machine load
hits both alike. Each timing is the median of ``repeats`` after ``warmup`` runs; the raw
per-repeat times (seconds) are kept in ``times_s`` so the report can show their spread and a
speedup interval (``metrics.intervals``). The report keeps batch size, sequence length, thread
count and device with the ratio.

``--speed`` (``SpeedConfig.mode``): ``full`` times every run, ``none`` none, ``auto`` only a model
whose dense computation differs from the base's (``unchanged_reason``): a structural method removed
layers, heads or widths, int8 / bf16 kernels run, or another ``--runtime``. Pruned zeros and
dequantized integer codes run the very same float32 kernels as the base, so timing them measures
noise. ``timed`` records the load average before and after the timing.

Classifiers are timed on one forward pass (``mode="forward"``); encoder-decoders on a whole
``generate`` call decoding exactly ``new_tokens`` tokens (``mode="generate"``: every decoding step
included, so speed does not depend on when EOS happens to come; NASH appendix F measures the
same way: paper setting batch 32, beam 4; CPU defaults here are smaller).
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, replace

import torch

from ..models.io import quantized_weight_counts
from ..quantization.candidates import candidates
from ..quantization.inputs import INPUT_ATTR
from ..quantization.layers import grouped_modules
from ..progress import bar
from ..config import SpeedConfig


def _inputs(model, batch: int, seq_len: int, seed: int = 0) -> dict:
    generator = torch.Generator().manual_seed(seed)
    vocab = model.get_input_embeddings().num_embeddings
    ids = torch.randint(5, vocab, (batch, seq_len), generator=generator)
    device = next(model.parameters()).device
    return {"input_ids": ids.to(device), "attention_mask": torch.ones_like(ids).to(device)}


@torch.inference_mode()
def time_call(model, inputs, config: SpeedConfig, generate: bool) -> float:
    """Seconds of one forward pass, or one ``generate`` call of exactly ``config.new_tokens`` tokens."""
    start = time.perf_counter()
    if generate:
        model.generate(**inputs, max_new_tokens=config.new_tokens, min_new_tokens=config.new_tokens,
                       num_beams=config.num_beams, do_sample=False)
    else:
        model(**inputs)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def compare_speed(base, compressed, config: SpeedConfig | None = None, generate: bool = False) -> dict:
    """Median latency (batch ``latency_batch``) and throughput (batch ``batch_size``) of both
    models, and compressed/base ratios (speedup = base time / compressed time); ``generate``
    times whole ``generate`` calls instead of forward passes."""
    config = config or SpeedConfig()
    base.eval()
    compressed.eval()
    result = {"config": asdict(config), "threads": torch.get_num_threads(), "mode": "generate" if generate else "forward",
              "device": str(next(base.parameters()).device), "times_s": {}}
    for label, batch in (("latency", config.latency_batch), ("throughput", config.batch_size)):
        inputs = _inputs(base, batch, config.seq_len)
        for _ in range(config.warmup):
            time_call(base, inputs, config, generate)
            time_call(compressed, inputs, config, generate)
        base_times, comp_times = [], []
        for _ in bar(range(config.repeats), f"speed: {label} ({config.repeats} interleaved repeats)"):
            base_times.append(time_call(base, inputs, config, generate))
            comp_times.append(time_call(compressed, inputs, config, generate))
        b, c = statistics.median(base_times), statistics.median(comp_times)
        result["times_s"][label] = {"base": base_times, "compressed": comp_times}
        if label == "latency":
            result["latency_ms"] = {"base": b * 1e3, "compressed": c * 1e3, "speedup": b / c}
        else:
            result["throughput_per_s"] = {"base": batch / b, "compressed": batch / c, "speedup": b / c}
    return result


LLM_DEFAULTS = {"batch_size": 4, "warmup": 1, "repeats": 5}  # causal-lm: ~1 min for a 135M model on 2 cores


def llm_speed_config(config: SpeedConfig) -> SpeedConfig:
    """``config`` with every field still at the encoder default replaced by the LLM default
    (``LLM_DEFAULTS``): a 32 × 128 batch of a 135M-parameter LM takes seconds per forward on a CPU."""
    encoder = SpeedConfig()
    return replace(config, **{k: v for k, v in LLM_DEFAULTS.items() if getattr(config, k) == getattr(encoder, k)})


@torch.inference_mode()
def forward_flops(model, batch: int, seq_len: int) -> int:
    """FLOPs of one forward pass over ``batch × seq_len`` tokens, as ``torch.utils.flop_counter``
    counts them (matrix products; attention where its kernel is registered)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        model(**_inputs(model, batch, seq_len))
    return int(counter.get_total_flops())


def flop_limit(base, compressed, config: SpeedConfig) -> dict:
    """Base / compressed FLOPs of one prefill (batch ``latency_batch``): the speedup a FLOP-bound
    runtime could reach from structural removal. int8 kernels are not counted by the flop
    counter, so a quantized model gets no ratio."""
    if quantized_weight_counts(compressed)[0]:
        return {"ratio": None, "why": "int8 quantized Linears are not counted by torch's flop counter"}
    b, c = (forward_flops(m, config.latency_batch, config.seq_len) for m in (base, compressed))
    return {"base_flops": b, "compressed_flops": c, "ratio": b / c if c else None,
            "counted": "torch.utils.flop_counter, one prefill forward"}


def unchanged_reason(methods: list, compressed, runtime: str, chain: str) -> str | None:
    """Why ``compressed`` runs the base's dense computation, or None when it does not: a method is
    structural (layers, heads or widths removed), int8 Linears or non-float32 weights run, or the
    runtime is not plain torch. ``methods``: the run's method objects in order; ``chain``: their one
    name (``report/naming.py``). ``--speed auto`` times only a changed computation; the card's
    ``speed.meaningful`` is whether it changed."""
    if runtime != "torch" or any(m.config.structured for m in methods):
        return None
    if quantized_weight_counts(compressed)[0] or any(p.is_floating_point() and p.dtype != torch.float32
                                                     for p in compressed.parameters()):
        return None
    verb = "leaves" if len(methods) == 1 else "leave"
    if any(getattr(m.config, "activations", "none") != "none" for m in methods):
        return (f"speed not timed: {chain} {verb} the base's fp32 kernels with the inputs' quantize-dequantize "
                "around them (W8A8 / FP8 emulated on CPU, slower than the base and no measure of a GPU's int8 / fp8 "
                "kernels); --speed full times it anyway")
    kept = []
    if any(not getattr(m.config, "quantizes", False) for m in methods):
        kept.append("zeros")
    kept += [f"dequantized {_codes(m.config)} codes" for m in methods
             if getattr(m.config, "quantizes", False) and hasattr(m.config, "format")]
    return (f"speed not timed: {chain} {verb} the dense fp32 computation unchanged ({' and '.join(kept)} run the "
            "same kernels as the base); --speed full times it anyway")


def _codes(config) -> str:
    """A quantizing method's codes in words (``quantization.format.QuantFormat.label``: fp8, int4), or mixed
    where a bit budget's formats differ in that word."""
    if not config.bits_budget:
        return config.format.label
    labels = {config.format.label} | {c.format_of(config).label for c in candidates(config) if not c.kept}
    return labels.pop() if len(labels) == 1 else "mixed"


def in_process_engine(compressed, runtime: str) -> str:
    """What runs forgetless's own timing of ``compressed`` (the card's ``speed.engine``): PyTorch (or
    ``--runtime``) in this process; a model holding quantized codes (compressed-tensors schemes) runs
    them dequantized to float32, its inputs quantize-dequantized: the cost of emulating the scheme, not
    the speed of an engine with integer or fp8 kernels (``serving/speed.py`` times that in vLLM)."""
    first = next(compressed.parameters(), None)
    device = first.device if first is not None else "cpu"
    engine = f"forgetless in-process, {'PyTorch' if runtime == 'torch' else runtime} on {device}"
    if grouped_modules(compressed) or any(getattr(m, INPUT_ATTR, None) is not None for m in compressed.modules()):
        engine += (" with the quantized weights dequantized to float32 (fake-quantized: no integer or fp8 kernel "
                   "ran), so a speedup below 1 here is the cost of emulating the scheme, not its served speed")
    return engine


def untimed_reason(mode: str, unchanged: str | None) -> str | None:
    """Why the speed is not timed under ``--speed mode``, or None to time it (``unchanged``: the
    ``unchanged_reason`` of the run)."""
    return "speed not timed (--speed none)" if mode == "none" else unchanged if mode == "auto" else None


def timed(mode: str, measure, *args) -> dict:
    """``measure(*args)`` (a speed result) with ``timed`` True and the 1 / 5 / 15-minute load average
    before and after it (``os.getloadavg``): timings taken on a loaded machine say so."""
    before = list(os.getloadavg())
    result = measure(*args)
    return {**result, "timed": True, "setting": mode,
            "load_average": {"before": before, "after": list(os.getloadavg())}}


def not_timed(reason: str, mode: str) -> dict:
    """The speed result of a run whose speed is not timed (card schema: ``report/card.py``)."""
    return {"timed": False, "why_not_timed": reason, "setting": mode}
