"""Benchmark: the demo end to end, and inference speed of physically pruned models vs the base.

Prints, measured side by side in one run on this machine:
1. wall and CPU time of `forgetless demo` (fine-tune MiniLM, compress, evaluate, benchmark, report) and the
   load average around it;
2. throughput / latency ratios of the bundled MiniLM after physically removing
   (a) 50% of heads + 50% of FFN units in every layer, (b) 3 of 6 layers,
   (c) the same as (a) but only masked by gates (no speedup expected), vs the unpruned model;
3. equality of the masked and sliced outputs.

Usage: python benchmarks/demo_and_speed.py [--skip-demo] [--seq-len 128] [--batch-size 64]
"""
from __future__ import annotations

import argparse
import copy
import os
import resource
import subprocess
import sys
import tempfile
import time

import torch

from forgetless.metrics.speed import SpeedConfig, compare_speed
from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.gates import Gates
from forgetless.models.loading import load_classifier


def time_demo() -> dict:
    """Wall and CPU time (user + system of the demo process) of ``forgetless demo`` and the load average
    before and after: the wall time is the CPU time stretched by whatever else shares the cores."""
    with tempfile.TemporaryDirectory() as out:
        before, load = resource.getrusage(resource.RUSAGE_CHILDREN), os.getloadavg()[0]
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "forgetless.cli", "demo", "--no-progress", "--out", out], check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"wall": wall, "cpu": cpu, "load_before": load, "load_after": os.getloadavg()[0]}


def half_heads_half_ffn(model):
    heads = {s.key: list(range(0, s.num_heads, 2)) for s in get_adapter(model).attention_sites(model)}
    units = {s.key: list(range(0, s.width, 2)) for s in get_adapter(model).ffn_sites(model)}
    return heads, units


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-demo", action="store_true")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.manual_seed(0)
    if not args.skip_demo:
        demo = time_demo()
        print(f"forgetless demo, end to end: {demo['wall']:.1f} s wall, {demo['cpu']:.1f} s CPU (user + system) on "
              f"{os.cpu_count()} cores, load average {demo['load_before']:.1f} before, {demo['load_after']:.1f} after")

    base, tokenizer = load_classifier("minilm", ["a", "b", "c"])
    heads, units = half_heads_half_ffn(base)
    sliced = surgery.prune_ffn(surgery.prune_heads(copy.deepcopy(base), heads), units)
    layers = surgery.drop_layers(copy.deepcopy(base), "encoder", [0, 2, 4])
    masked = copy.deepcopy(base)
    gates = Gates(masked)
    for key, keep in heads.items():
        gates.set_head_mask(key, keep)
    for key, keep in units.items():
        gates.set_ffn_mask(key, keep)

    x = tokenizer(["the doctor saw the lawyer near the old bank"] * 4, return_tensors="pt")
    with torch.no_grad():
        diff = (masked(**x).logits - sliced(**x).logits).abs().max().item()
    print(f"max |masked − sliced| logits: {diff:.2e}")

    config = SpeedConfig(batch_size=args.batch_size, seq_len=args.seq_len, repeats=args.repeats, warmup=2)
    print(f"\nbatch {config.batch_size}, seq {config.seq_len}, {torch.get_num_threads()} threads, median of "
          f"{config.repeats}\n")
    print(f"{'variant':<38} {'params':>8} {'throughput ×':>13} {'latency ×':>10}")
    n_base = sum(p.numel() for p in base.parameters())
    for name, model in [("50% heads + 50% FFN removed", sliced), ("3 of 6 layers removed", layers),
                        ("50% heads + 50% FFN masked only", masked)]:
        r = compare_speed(base, model, config)
        n = sum(p.numel() for p in model.parameters())
        print(f"{name:<38} {n / n_base:>8.3f} {r['throughput_per_s']['speedup']:>13.2f} "
              f"{r['latency_ms']['speedup']:>10.2f}")


if __name__ == "__main__":
    main()
