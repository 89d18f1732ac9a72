"""NASH vs CoFi-style on the built-in synthetic look-up task with a tiny T5 (minutes on CPU): a
quality comparison where the teacher actually solves the task.

    python benchmarks/nash_synthetic.py --out runs/bench_nash_synthetic
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.models import io
from forgetless.seq2seq import speed
from forgetless.seq2seq.data import load_task
from forgetless.seq2seq.pipeline import run_compress, train_teacher


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="runs/bench_nash_synthetic")
    p.add_argument("--model", default="tiny-t5")
    p.add_argument("--n-train", type=int, default=2000)
    p.add_argument("--n-dev", type=int, default=200)
    p.add_argument("--teacher-epochs", type=float, default=12)
    p.add_argument("--prune-epochs", type=float, default=3)
    p.add_argument("--finetune-epochs", type=float, default=2)
    p.add_argument("--learning-rate", type=float, default=3e-3)
    p.add_argument("--decoder-layers", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--cofi-sparsity", type=float, default=0.4)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    out, started = Path(a.out), time.time()
    task = load_task("synthetic", n_train=a.n_train, n_dev=a.n_dev)
    common = dict(task="synthetic", n_train=a.n_train, n_dev=a.n_dev, batch_size=32, learning_rate=a.learning_rate,
                  max_source_length=64, max_target_length=4, max_new_tokens=4)
    teacher, tokenizer, _ = train_teacher(a.model, output_dir=out / "teacher", epochs=a.teacher_epochs, task_obj=task,
                                          **{k: v for k, v in common.items() if k not in ("task", "n_train", "n_dev")})
    run = dict(teacher=str(out / "teacher"), prune_epochs=a.prune_epochs, finetune_epochs=a.finetune_epochs,
               l0_learning_rate=0.05, speed_repeats=1, threads=a.threads, **common)
    reports = {f"nash_d{d}": run_compress("nash", output_dir=out / f"nash_d{d}", decoder_layers=d, **run)
               for d in a.decoder_layers}
    reports["cofi"] = run_compress("cofi", output_dir=out / "cofi", sparsity=a.cofi_sparsity, **run)
    models = {"teacher": teacher, **{n: io.load_model(out / n / "model")[0] for n in reports}}
    timing = speed.compare_generation(models, tokenizer, task.dev.sources, batch_size=8, max_new_tokens=4,
                                      max_source_length=64, repeats=5)
    evals = {"teacher": next(iter(reports.values()))["models"]["teacher"]["eval"]["dev"]}
    evals.update({n: r["models"][r["method"]]["eval"]["dev"] for n, r in reports.items()})
    layers = {"teacher": next(iter(reports.values()))["models"]["teacher"]["layers"]}
    layers.update({n: r["models"][r["method"]]["layers"] for n, r in reports.items()})
    lines = [f"# NASH on the synthetic look-up task ({a.model}), {a.n_train} train / {a.n_dev} dev", "",
             "| model | enc/dec layers | ROUGE-L | METEOR | latency (s) | speedup |", "|---|---:|---:|---:|---:|---:|"]
    for name, ev in evals.items():
        lines.append(f"| {name} | {layers[name]['encoder']}/{layers[name]['decoder']} | {ev['rougeL']:.2f} | "
                     f"{ev['meteor']:.2f} | {timing['seconds'][name]:.4f} | {timing['speedup'][name]:.2f}× |")
    summary = {"evals": evals, "layers": layers, "speed": timing, "seconds": time.time() - started}
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "summary.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    return summary


if __name__ == "__main__":
    main()
