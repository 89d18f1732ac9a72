"""Benchmark: ONNX export of a head-pruned MiniLM classifier, and onnxruntime vs PyTorch speed.

Prints, measured in one run on this machine:
1. export wall time and the max |ONNX − PyTorch| logit difference found by ``export_onnx``;
2. latency (batch 1) and throughput-batch (batch 32) times of PyTorch and onnxruntime on the same
   pruned model, interleaved (PyTorch, ORT, PyTorch, ORT, ...), as median [q1, q3] and the ratio
   PyTorch / ORT with its bootstrap interval (``metrics.intervals.speedup_interval``);
3. with ``--spinning``: PyTorch's batch-32 time interleaved with an ORT session whose threads spin
   (the onnxruntime default) vs one with spinning off, to show why ``ort_session`` turns it off.

The load average (``os.getloadavg()``) is printed before and after: numbers from a loaded machine
are ratios of interleaved runs, never absolute times to compare across runs.

Usage: python benchmarks/onnx_export.py [--repeats 15] [--seq-len 128] [--threads 1] [--spinning]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

from forgetless.metrics.intervals import speedup_interval, timing_summary
from forgetless.export import export_onnx, ort_session
from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.io import save_model
from forgetless.models.loading import load_classifier


def uneven_head_pruning(model):
    """Keep half the heads in even layers and a quarter in odd layers (uneven shapes)."""
    keep = {}
    for site in get_adapter(model).attention_sites(model):
        step = 2 if site.layer % 2 == 0 else 4
        keep[site.key] = list(range(0, site.num_heads, step))
    return surgery.prune_heads(model, keep)


def inputs(tokenizer, batch: int, seq_len: int) -> dict[str, torch.Tensor]:
    text = "the doctor near the old bank saw the lawyer who was reading a long report " * 20
    return dict(tokenizer([text] * batch, truncation=True, max_length=seq_len, padding="max_length",
                          return_tensors="pt"))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleave(first, second, repeats: int, warmup: int = 2) -> tuple[list[float], list[float]]:
    for _ in range(warmup):
        first(), second()
    a, b = [], []
    for _ in range(repeats):
        a.append(timed(first))
        b.append(timed(second))
    return a, b


def fmt(times: list[float]) -> str:
    s = timing_summary(times)
    return f"{s['median'] * 1e3:8.2f} ms [{s['q1'] * 1e3:.2f}, {s['q3'] * 1e3:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--spinning", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"load average before: {os.getloadavg()}")
    model, tokenizer = load_classifier("minilm", ["a", "b", "c"])
    uneven_head_pruning(model.eval())
    with tempfile.TemporaryDirectory() as tmp:
        save_model(model, f"{tmp}/m", tokenizer)
        start = time.perf_counter()
        result = export_onnx(f"{tmp}/m", f"{tmp}/onnx", threads=args.threads)
        print(f"export_onnx (head-pruned MiniLM, heads per layer "
              f"{[s.num_heads for s in get_adapter(model).attention_sites(model)]}): "
              f"{time.perf_counter() - start:.1f} s, max |ONNX − PyTorch| = {result['max_abs_diff']:.2e}, "
              f"opset {result['opset']}")
        session = ort_session(result["files"]["model"], threads=args.threads)
        names = result["inputs"]["model"]
        print(f"\n{args.threads} threads, seq {args.seq_len}, {args.repeats} interleaved repeats, "
              "median [q1, q3]; ratio = PyTorch / ORT with 95% bootstrap interval")
        for label, batch in (("latency, batch 1", 1), ("batch 32", 32)):
            x = {k: v for k, v in inputs(tokenizer, batch, args.seq_len).items() if k in names}
            feeds = {k: v.numpy() for k, v in x.items()}
            with torch.inference_mode():
                pt, ort = interleave(lambda: model(**x), lambda: session.run(None, feeds), args.repeats)
            ratio = speedup_interval(pt, ort, seed=0)
            print(f"{label:<18} PyTorch {fmt(pt)}   ORT {fmt(ort)}   ratio {ratio['speedup']:.2f} "
                  f"[{ratio['low']:.2f}, {ratio['high']:.2f}]")
        if args.spinning and args.threads < 2:
            print("\n--spinning needs --threads >= 2 (a one-thread ORT session has no pool threads to spin)")
        elif args.spinning:
            import onnxruntime as ort_module

            spinning_options = ort_module.SessionOptions()
            spinning_options.intra_op_num_threads = args.threads
            spinning = ort_module.InferenceSession(result["files"]["model"], spinning_options,
                                                   providers=["CPUExecutionProvider"])
            x = {k: v for k, v in inputs(tokenizer, 32, args.seq_len).items() if k in names}
            feeds = {k: v.numpy() for k, v in x.items()}
            print("\nPyTorch batch 32, each repeat right after an ORT run (ORT time not counted):")
            with torch.inference_mode():
                def pytorch_after(sess):
                    sess.run(None, feeds)
                    return timed(lambda: model(**x))
                off, on = [], []
                for _ in range(args.repeats):
                    off.append(pytorch_after(session))
                    on.append(pytorch_after(spinning))
            ratio = speedup_interval(on, off, seed=0)
            print(f"  ORT spinning off: {fmt(off)}   spinning on: {fmt(on)}   slowdown {ratio['speedup']:.2f} "
                  f"[{ratio['low']:.2f}, {ratio['high']:.2f}]")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
