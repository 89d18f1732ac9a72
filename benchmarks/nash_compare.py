"""NASH at several decoder depths vs the CoFi-style baseline, all through the one pipeline and one
shared teacher: quality (the task's metric on dev; ROUGE-L and METEOR for generation, accuracy for
text-to-text classification), parameters and generation speedup measured side by side.

    python benchmarks/nash_compare.py --task synthetic-lookup --model tiny-t5 --out runs/bench_nash
    python benchmarks/nash_compare.py --task tweetqa --data-dir ../shared/data --model minilm \\
        --train-size 1000 --eval-size 200 --freeze-embeddings --out runs/bench_nash_tweetqa
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import torch

from forgetless.data.tasks import load_task
from forgetless.fsutil import atomic_write_text
from forgetless.config import EvalConfig, RunConfig, SpeedConfig, SweepConfig, TrainConfig
from forgetless.methods.nash.config import CofiConfig, NashConfig
from forgetless.pipeline import run_and_save
from forgetless.sweep import run_sweep


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--task", default="synthetic-lookup")
    p.add_argument("--data-dir")
    p.add_argument("--model", default="tiny-t5")
    p.add_argument("--train-size", type=int, default=2000)
    p.add_argument("--eval-size", type=int, default=200)
    p.add_argument("--teacher-epochs", type=float, default=12)
    p.add_argument("--epochs", type=float, default=3, help="pruning phase")
    p.add_argument("--finetune-epochs", type=float, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--decoder-layers", default="1,2,3")
    p.add_argument("--cofi-sparsity", type=float, default=0.4)
    p.add_argument("--freeze-embeddings", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default="runs/bench_nash")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    task = load_task(a.task, data_dir=a.data_dir, train_size=a.train_size, eval_size=a.eval_size)
    train = TrainConfig(epochs=a.epochs, learning_rate=a.lr, batch_size=32, max_length=64, max_target_length=8,
                        freeze_embeddings=a.freeze_embeddings, progress=False)
    speed = SpeedConfig(batch_size=8, seq_len=64, repeats=5, new_tokens=8)
    out = Path(a.out)
    sweep = SweepConfig(objectives=["nash-distil"], seeds=[0], levels=a.decoder_layers.split(","),
                        method=NashConfig(finetune_epochs=a.finetune_epochs), level_option="decoder_layers",
                        model=a.model, train=train, teacher_epochs=a.teacher_epochs, student_init="teacher",
                        speed=speed, eval=EvalConfig(max_new_tokens=8), progress=False)
    run_sweep(task, sweep, out / "nash")
    teacher = json.loads(next((out / "nash" / "runs").glob("*/report.json")).read_text())["run"]["teacher"]
    cofi = run_and_save(task, RunConfig(model=a.model, method=CofiConfig(sparsity=a.cofi_sparsity,
                                                                         finetune_epochs=a.finetune_epochs),
                                        teacher=str(teacher), train=train, speed=speed,
                                        eval=EvalConfig(max_new_tokens=8), progress=False), out / "cofi").card.to_json()

    cards = [json.loads((Path(r).parent / "report.json").read_text())
             for r in sorted((out / "nash" / "runs").glob("*/report.json"))] + [cofi]
    metric = cards[0]["task"]["metric"]
    lines = [f"# NASH vs CoFi-style on {task.name} ({a.model}); load average {os.getloadavg()[0]:.1f}", "",
             f"| model | dec layers | params (M) | dev {metric} | generation speedup |", "|---|---:|---:|---:|---:|"]
    base = cards[0]
    lines.append(f"| teacher | all | {base['params']['base']['total'] / 1e6:.2f} | "
                 f"{base['headline']['base']:.3f} | 1.00× |")
    for card in cards:
        cfg = card["method"]["config"]
        depth = cfg.get("decoder_layers", "all")
        lines.append(f"| {card['method']['name']} | {depth} | {card['params']['compressed']['total'] / 1e6:.2f} | "
                     f"{card['headline']['compressed']:.3f} | {card['speed']['throughput_per_s']['speedup']:.2f}× |")
    text = "\n".join(lines) + f"\n\nSweep table: {out / 'nash' / 'sweep.md'}\n"
    atomic_write_text(out / "nash_compare.md", text)
    print(text)
    return text


if __name__ == "__main__":
    main()
