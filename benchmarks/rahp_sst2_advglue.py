"""Benchmark: unpruned vs Michel importance-pruned vs RAHP-pruned MiniLM on sst2 → AdvGLUE-sst2.

Time-boxed for CPU: a seeded, stratified cap of the SST-2 training set, one epoch of fine-tuning
for the teacher and again after pruning, short sequences. Both methods prune the same share of
heads. Reported per model: SST-2 dev accuracy, AdvGLUE-sst2 accuracy, mean CLEVER score
(Weng et al. 2018) on a fixed dev subset, the paper's ratio C(x, M) (RAHP eq. 1) on the same
subset, latency / throughput ratio against the unpruned model, and head-scoring time. An (α, β)
ablation on RAHP's stored scores (pruning without fine-tuning) gives the accuracy-vs-CLEVER
scatter. Usage:

    python benchmarks/rahp_sst2_advglue.py --data-dir ../shared/data --out runs/rahp-bench
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers

from forgetless.data.tasks import capped, load_task
from forgetless.metrics.clever import CleverConfig, clever_evaluate
from forgetless.metrics.predict import predict_logits
from forgetless.metrics.speed import SpeedConfig, compare_speed
from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.methods._shared.calibration import scoring_batches
from forgetless.methods.rahp.model_scoring import robustness_c
from forgetless.methods.rahp.plots import ablation_scatter
from forgetless.methods.rahp.runner import rahp_decision
from forgetless.methods._shared.head_layout import layout_from_json
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS
from forgetless.models.adapters import get_adapter
from forgetless.models.io import is_forgetless_folder, load_model, save_model
from forgetless.models.loading import load_classifier
from forgetless.models.surgery import prune_heads
from forgetless.training.trainer import TrainConfig, fine_tune


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def accuracy(model, tokenizer, examples, max_length: int) -> float:
    logits = predict_logits(model, tokenizer, examples, 64, max_length)
    return float((logits.argmax(-1) == np.asarray(examples.labels)).mean())


def measure(model, teacher, tokenizer, task, args, clever_cfg) -> dict:
    out = {"dev": accuracy(model, tokenizer, task.dev, args.max_length),
           "advglue": accuracy(model, tokenizer, task.challenges["advglue"], args.max_length)}
    clever = clever_evaluate(model, tokenizer, task.dev, clever_cfg)
    out["clever"] = {k: v for k, v in clever.items() if k != "per_example"}
    subset = capped(task.dev, clever_cfg.examples, clever_cfg.seed)
    out["c_ratio"] = float(robustness_c(model, scoring_batches(tokenizer, subset, 32, args.max_length)).mean())
    if model is not teacher:
        out["speed"] = compare_speed(teacher, model, SpeedConfig(batch_size=32, seq_len=args.max_length, repeats=9),
                                     progress=False)
    out["heads"] = sum(site.num_heads for site in get_adapter(model).attention_sites(model))
    out["params"] = sum(p.numel() for p in model.parameters())
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--out", default="runs/rahp-bench")
    p.add_argument("--train-size", type=int, default=8000)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--finetune-size", type=int, default=0,
                   help="training examples for the fine-tuning after pruning (0: the whole capped training set)")
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--ratio", type=float, default=0.6)
    p.add_argument("--scoring-examples", type=int, default=128)
    p.add_argument("--clever-examples", type=int, default=32)
    p.add_argument("--clever-batches", type=int, default=16)
    p.add_argument("--clever-samples", type=int, default=8)
    p.add_argument("--clever-radius", type=float, default=2.0)
    p.add_argument("--ablation-examples", type=int, default=300, help="dev examples per ablation point (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--teacher", help="reuse a fine-tuned teacher folder (e.g. from an earlier run's out/teacher)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(args.seed)
    started = time.perf_counter()

    task = load_task("sst2", data_dir=args.data_dir, seed=args.seed, train_size=args.train_size)
    train_cfg = TrainConfig(epochs=args.epochs, batch_size=32, max_length=args.max_length, seed=args.seed,
                            save_steps=100, logging_steps=50, progress=False)
    clever_cfg = CleverConfig(examples=args.clever_examples, batches=args.clever_batches,
                              samples=args.clever_samples, radius=args.clever_radius, max_length=args.max_length,
                              seed=args.seed)
    log(f"task: {task.protocol}; train {len(task.train)}, dev {len(task.dev)}, advglue {len(task.challenges['advglue'])}")

    teacher_dir = Path(args.teacher) if args.teacher else out / "teacher"
    if args.teacher and not is_forgetless_folder(teacher_dir):
        p.error(f"--teacher {teacher_dir} is not a saved forgetless model folder")
    if is_forgetless_folder(teacher_dir):
        teacher, tokenizer = load_model(teacher_dir)
        log("teacher reloaded")
    else:
        transformers.set_seed(args.seed)
        teacher, tokenizer = load_classifier("minilm", task.label_names)
        start = time.perf_counter()
        teacher = fine_tune(teacher, tokenizer, task.train, out / "work" / "train-teacher", train_cfg)
        save_model(teacher, teacher_dir, tokenizer, {"role": "teacher"})
        log(f"teacher fine-tuned in {time.perf_counter() - start:.0f} s")
    teacher.eval()
    results = {"config": vars(args), "protocol": task.protocol, "models": {}}
    results["models"]["unpruned"] = measure(teacher, teacher, tokenizer, task, args, clever_cfg)
    log(f"unpruned: {json.dumps({k: v for k, v in results['models']['unpruned'].items() if k != 'clever'})}")

    finetune_task = copy.copy(task)
    if args.finetune_size and args.finetune_size < len(task.train):
        finetune_task.train = capped(task.train, args.finetune_size, args.seed + 11)
        log(f"post-pruning fine-tuning on a seeded stratified {len(finetune_task.train)}-example subset")
    methods = {"importance": ("heads", {"ratio": args.ratio}),
               "rahp": ("rahp", {"ratio": args.ratio, "protect": min(0.1, 1.0 - args.ratio)})}
    rahp_method = None
    for label, (name, options) in methods.items():
        options.update(scoring_examples=args.scoring_examples, scoring_length=args.max_length)
        method = METHODS.get(name)(METHODS.make_config(name, options))
        ctx = CompressionContext(task=finetune_task, tokenizer=tokenizer, teacher=teacher, work_dir=out / "work" / label,
                                 train_config=train_cfg, seed=args.seed)
        ctx.work_dir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        transformers.set_seed(args.seed)
        model = method.compress(copy.deepcopy(teacher), ctx).eval()
        log(f"{label}: compressed in {time.perf_counter() - start:.0f} s; {ctx.notes}")
        save_model(model, out / label, tokenizer, {"method": method.describe(), "artifacts": method.artifacts()})
        method.plots(out / "plots")
        results["models"][label] = measure(model, teacher, tokenizer, task, args, clever_cfg)
        results["models"][label]["scoring_seconds"] = method.record["scoring_seconds"]
        results["models"][label]["notes"] = ctx.notes
        log(f"{label}: {json.dumps({k: v for k, v in results['models'][label].items() if k not in ('clever', 'speed', 'notes')})}")
        if name == "rahp":
            rahp_method = method
        atomic_write_json(out / "results.json", results)

    if args.ablation_examples and rahp_method is not None:
        results["ablation"] = ablation(rahp_method, teacher, tokenizer, task, args, clever_cfg)
        ablation_scatter(results["ablation"], out / "plots" / "rahp_ablation.png",
                         f"RAHP (α, β) ablation, ρ={args.ratio}, no fine-tuning")
    results["seconds"] = time.perf_counter() - started
    atomic_write_json(out / "results.json", results)
    atomic_write_text(out / "results.md", table(results))
    print(table(results))
    return 0


def ablation(method, teacher, tokenizer, task, args, clever_cfg) -> list[dict]:
    """Re-select heads from RAHP's stored scores for several (α, β); prune a copy of the teacher
    (no fine-tuning), measure dev accuracy on a subset and CLEVER on a smaller one."""
    scores = method.record["scores"]
    layout = layout_from_json(scores["layout"])
    dev = capped(task.dev, args.ablation_examples, args.seed + 7)
    small = CleverConfig(**{**clever_cfg.__dict__, "examples": max(8, clever_cfg.examples // 3)})
    points = []
    for alpha, beta in ((0.0, 1.0), (0.5, 1.0), (1.0, 1.0), (1.0, 0.0)):
        decision = rahp_decision(scores, args.ratio, alpha, beta, method.config.protect)
        model = prune_heads(copy.deepcopy(teacher), layout.keep_dict(torch.tensor(decision["pruned_mask"]))).eval()
        point = {"alpha": alpha, "beta": beta, "accuracy": accuracy(model, tokenizer, dev, args.max_length),
                 "clever": clever_evaluate(model, tokenizer, task.dev, small)["mean"]}
        log(f"ablation {point}")
        points.append(point)
    return points


def table(results: dict) -> str:
    cfg = results["config"]
    lines = [f"sst2 → AdvGLUE-sst2, MiniLM-L6 (72 heads), ρ = {cfg['ratio']}; {results['protocol']}; "
             f"{cfg['epochs']:g} epoch(s) (teacher; after pruning on {cfg.get('finetune_size') or cfg['train_size']} "
             f"examples), max length {cfg['max_length']}, scoring set {cfg['scoring_examples']}, "
             f"torch threads {torch.get_num_threads()}", "",
             "| model | heads | SST-2 dev acc | AdvGLUE acc | mean CLEVER | mean C(x,M) | latency ratio (b=1) "
             "| throughput speedup (b=32) | scoring time (s) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, r in results["models"].items():
        speed = r.get("speed")
        lat = f"{speed['latency_ms']['compressed'] / speed['latency_ms']['base']:.2f}" if speed else "1.00"
        thr = f"{speed['throughput_per_s']['speedup']:.2f}×" if speed else "1.00×"
        lines.append(f"| {label} | {r['heads']} | {r['dev']:.4f} | {r['advglue']:.4f} | {r['clever']['mean']:.4f} "
                     f"| {r['c_ratio']:.4f} | {lat} | {thr} | {r.get('scoring_seconds', 0):.1f} |")
    c = results["models"]["unpruned"]["clever"]["params"]
    lines += ["", f"CLEVER: ℓ{c['norm']} ball R={c['radius']} in input-embedding space, {c['batches']} batches × "
              f"{c['samples']} samples, reverse-Weibull location as Lipschitz estimate, score min(g/L̂, R), "
              f"{c['examples']} fixed dev examples (misclassified ones score 0). Latency ratio = pruned / unpruned "
              "median latency (batch 1), measured interleaved on a shared, loaded CPU: noisy."]
    if results.get("ablation"):
        lines += ["", "| α | β | dev acc (subset, no fine-tune) | mean CLEVER |", "|---|---|---|---|"]
        lines += [f"| {p['alpha']} | {p['beta']} | {p['accuracy']:.4f} | {p['clever']:.4f} |" for p in results["ablation"]]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
