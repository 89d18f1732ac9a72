"""Benchmark: runtimes and quantization of MiniLM on SST-2, alone and after 50% heads + 50% FFN pruning.

One run, one machine, every number against the fp32 PyTorch base measured in the same process:

* variants: bf16 weights (``quantize`` dtype bf16 / runtime torch-bf16), dynamic int8 (``quantize``
  dtype int8, per-channel), onnxruntime (``--runtime onnxruntime``: ``export_onnx`` + ``ort_session``,
  thread spinning off), and the same three after removing 50% of the heads and 50% of the FFN units
  of every layer (units ranked by the ℓ2 norm of their weights, then a short fine-tune);
* accuracy on SST-2 dev and the AdvGLUE SST-2 challenge set, the deltas against the base, and
  prediction agreement (share of identical predictions with the base, ``metrics/runtime.py``);
* speed: throughput (batch 32) and latency (batch 1) at sequence length 128; base and variant calls
  interleaved (base, variant, base, variant, ...); the speedup of each pair is base / variant and we
  print the median and IQR of those ratios, with the load average before and after.

Usage: python benchmarks/runtimes_and_quantization.py --data-dir ../shared/data [--teacher FOLDER]
       [--repeats 9] [--threads 2] [--train-size 2000] [--eval-size N] [--finetune-steps 60] [--out benchmarks/runtimes_and_quantization_results.md]
Without ``--teacher`` the bundled MiniLM is fine-tuned on a ``--train-size`` SST-2 sample first (one epoch).
"""
from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from forgetless.data.tasks import load_task
from forgetless.metrics.accuracy import evaluate_task
from forgetless.metrics.runtime import agreement, deploy
from forgetless.metrics.speed import SpeedConfig, _inputs, time_call
from forgetless.kinds import KINDS
from forgetless.registry import METHODS
from forgetless.models import surgery
from forgetless.models.adapters import get_adapter
from forgetless.models.io import load_model
from forgetless.models.loading import load_classifier
from forgetless.training.trainer import TrainConfig, fine_tune



def quantized(model, dtype: str):
    method = METHODS.get("quantize")(METHODS.make_config("quantize", {"dtype": dtype}))
    ctx = type("Ctx", (), {"notes": []})()
    return method.compress(copy.deepcopy(model), ctx), method.speedup


def norm_prune(model, fraction: float = 0.5):
    """Keep the (1 − fraction) heads and FFN units of each layer with the largest weight ℓ2 norm."""
    adapter = get_adapter(model)
    heads, ffn = {}, {}
    for site in adapter.attention_sites(model):
        n = site.num_heads
        score = torch.zeros(n)
        for weight, dim, role in site.head_parameters():
            width = site.unit_width(role)
            score += weight.detach().pow(2).movedim(dim, 0).reshape(n, width, -1).sum((1, 2))
        heads[site.key] = sorted(score.topk(n - int(n * fraction)).indices.tolist())
    for site in adapter.ffn_sites(model):
        w = site.width
        score = torch.zeros(w)
        for weight, dim in site.unit_parameters():
            score += weight.detach().pow(2).movedim(dim, 0).reshape(w, -1).sum(1)
        ffn[site.key] = sorted(score.topk(w - int(w * fraction)).indices.tolist())
    surgery.prune_heads(model, heads)
    surgery.prune_ffn(model, ffn)
    return model


def interleaved(base, variant, batch: int, seq_len: int, repeats: int, warmup: int = 2) -> dict:
    config = SpeedConfig(batch_size=batch, seq_len=seq_len)
    inputs = _inputs(base, batch, seq_len)
    for _ in range(warmup):
        time_call(base, inputs, config, False), time_call(variant, inputs, config, False)
    base_t, var_t = [], []
    for _ in range(repeats):
        base_t.append(time_call(base, inputs, config, False))
        var_t.append(time_call(variant, inputs, config, False))
    ratios = np.asarray(base_t) / np.asarray(var_t)
    q1, med, q3 = np.percentile(ratios, [25, 50, 75])
    return {"speedup": float(med), "iqr": (float(q1), float(q3)), "base_ms": 1e3 * float(np.median(base_t)),
            "variant_ms": 1e3 * float(np.median(var_t))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("FORGETLESS_DATA_DIR", "../shared/data"))
    parser.add_argument("--teacher", help="a forgetless folder with MiniLM fine-tuned on SST-2 (else fine-tune)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--eval-size", type=int, default=None, help="cap each evaluation set")
    parser.add_argument("--train-size", type=int, default=2000, help="SST-2 training sample (teacher, pruned)")
    parser.add_argument("--finetune-steps", type=int, default=60, help="steps of fine-tuning after pruning (0: none)")
    parser.add_argument("--out", default=str(Path(__file__).with_name("runtimes_and_quantization_results.md")))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started, load_before = time.time(), os.getloadavg()
    task = load_task("sst2", data_dir=args.data_dir, seed=0, train_size=args.train_size, eval_size=args.eval_size)
    work = Path(tempfile.mkdtemp(prefix="runtimes-"))
    train = TrainConfig(epochs=1, batch_size=32, max_length=64, learning_rate=5e-5, progress=False)
    if args.teacher:
        base, tokenizer = load_model(args.teacher)
    else:
        base, tokenizer = load_classifier("minilm", task.label_names)
        base = fine_tune(base, tokenizer, task.train, work / "teacher", train)
    base = base.float().eval()
    pruned = norm_prune(copy.deepcopy(base))
    if args.finetune_steps > 0:
        pruned = fine_tune(pruned, tokenizer, task.train, work / "pruned",
                           TrainConfig(**{**train.__dict__, "max_steps": args.finetune_steps}))
    pruned.eval()
    kind = KINDS["classifier"]
    variants = {"fp32 base (PyTorch)": (base, None)}
    for prefix, model in (("", base), ("50/50-pruned ", pruned)):
        if prefix:
            variants[f"{prefix}fp32"] = (model, None)
        bf16, why_bf16 = quantized(model, "bf16")
        int8, why_int8 = quantized(model, "int8")
        variants[f"{prefix}bf16"] = (bf16, why_bf16)
        variants[f"{prefix}int8 dynamic"] = (int8, why_int8)
        variants[f"{prefix}onnxruntime"] = (deploy(model, "onnxruntime", kind, work / f"onnx-{len(prefix)}"), None)
    results, base_predictions = {}, None
    for name, (model, expected) in variants.items():
        t0 = time.perf_counter()
        scores = evaluate_task(model, tokenizer, task, 64, 128)
        eval_s = time.perf_counter() - t0
        predictions = scores.pop("predictions")
        base_predictions = base_predictions or predictions
        row = {"dev": scores["sets"]["dev"]["accuracy"], "challenge": scores["challenge_pooled"],
               "agreement": agreement({"base": base_predictions, "compressed": predictions})["pooled"],
               "eval_s": eval_s, "expected": expected}
        if model is not base:
            row["throughput"] = interleaved(base, model, 32, args.seq_len, args.repeats)
            row["latency"] = interleaved(base, model, 1, args.seq_len, args.repeats)
        results[name] = row
        print(name, {k: v for k, v in row.items() if k != "expected"}, flush=True)
    write(results, args, task, load_before, os.getloadavg(), time.time() - started, base, pruned)


def write(results, args, task, load_before, load_after, wall, base, pruned) -> None:
    b = results["fp32 base (PyTorch)"]
    pct = lambda x: f"{100 * x:.1f}"  # noqa: E731
    params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    lines = ["# Runtimes and quantization: MiniLM-L6 on SST-2 (dev) and AdvGLUE SST-2 (challenge)", "",
             f"`python benchmarks/runtimes_and_quantization.py --repeats {args.repeats} --threads {args.threads}"
             f"{' --teacher ' + args.teacher if args.teacher else ''} --train-size {args.train_size} --eval-size "
             f"{args.eval_size} --finetune-steps {args.finetune_steps}`", "",
             f"{args.threads} torch threads (onnxruntime: the same, spinning off), sequence length {args.seq_len}; "
             f"dev n={len(task.dev)}, challenge n={sum(len(s) for s in task.challenges.values())}; "
             f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; {wall / 60:.1f} min in all; "
             f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}.", "",
             f"Pruned model: 50% of heads and 50% of FFN units removed in every layer (ℓ2 weight norm), "
             f"{args.finetune_steps} fine-tuning steps; {params(pruned) / params(base):.2f}× the parameters.", "",
             "Speedups are base time / variant time of interleaved pairs: median [IQR] over "
             f"{args.repeats} pairs. Agreement: share of identical predictions with the fp32 base (dev + challenge).",
             "", "| variant | dev acc | Δ dev | challenge acc | Δ challenge | agreement | throughput ×, batch 32 "
                 "| latency ×, batch 1 | speedup expected? |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        speed = [f"{s['speedup']:.2f} [{s['iqr'][0]:.2f}, {s['iqr'][1]:.2f}]" if (s := r.get(k)) else "1 (ref.)"
                 for k in ("throughput", "latency")]
        expected = "" if r["expected"] is None else ("yes" if r["expected"]["expected"] else "no") + \
            f": {r['expected']['why']}"
        lines.append(f"| {name} | {pct(r['dev'])} | {100 * (r['dev'] - b['dev']):+.1f} | {pct(r['challenge'])} | "
                     f"{100 * (r['challenge'] - b['challenge']):+.1f} | {pct(r['agreement'])} | {speed[0]} | "
                     f"{speed[1]} | {expected} |")
    lines += ["", "Median times (ms), base / variant, as measured next to each variant:", ""]
    lines += [f"- {name}: throughput {r['throughput']['base_ms']:.0f} / {r['throughput']['variant_ms']:.0f}, "
              f"latency {r['latency']['base_ms']:.1f} / {r['latency']['variant_ms']:.1f}"
              for name, r in results.items() if "throughput" in r]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
