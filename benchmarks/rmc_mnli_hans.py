"""Table 7 of Du et al. ("What do Compressed Large Language Models Forget?") on real data, time-boxed
for CPU: mnli-small → HANS (data README protocol: seeded stratified 80/20 split of MNLI dev matched;
HANS as the challenge set, 3-way predictions collapsed to entailment / non-entailment; hard/easy =
Gururangan et al. 2018 hardness), Vanilla / Distil / Smooth / Focal / JTT / RMC guiding magnitude
pruning to 40% sparsity, plus the agreement of the variance-based difficulty split with the
Gururangan hardness labels of the training rows.

    python benchmarks/rmc_mnli_hans.py --data-dir ../shared/data --out runs/rmc-mnli-hans

Defaults (chosen to finish in under an hour on 2 shared, busy CPU cores): 1,500 training examples
(seeded, stratified sample of the 7,852-row train split), max length 80 tokens, batch 16, lr 5e-5,
teacher 3 epochs, each pruned student 1 epoch starting from the fine-tuned teacher, dev = a seeded
stratified 600-row sample of the 1,963-row held-out split, HANS = a seeded 600-example sample
stratified by label and heuristic, difficulty from five pruned models (0.2-0.85) with a 0.2-epoch
recovery fine-tune each, JTT identification model 1 epoch, one seed, one torch thread.
"""
from __future__ import annotations

import argparse
import sys
import time

import torch

from forgetless.data.tasks import load_task
from forgetless.sweep import render_markdown, run_sweep
from forgetless.config import SweepConfig, TrainConfig


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--out", default="runs/rmc-mnli-hans")
    p.add_argument("--objectives", default="ce,rmc,distil,jtt,smooth,focal", help="in run order")
    p.add_argument("--seeds", default="0")
    p.add_argument("--sparsities", default="0.4")
    p.add_argument("--train-size", type=int, default=1500)
    p.add_argument("--eval-size", type=int, default=600, help="cap on each evaluation set (dev has 1,963 rows)")
    p.add_argument("--epochs", type=float, default=1.0, help="student (pruning-aware) training epochs")
    p.add_argument("--teacher-epochs", type=float, default=3.0)
    p.add_argument("--student-init", default="teacher", choices=["pretrained", "teacher"])
    p.add_argument("--recovery-epochs", type=float, default=0.2, help="difficulty: recovery fine-tune per level")
    p.add_argument("--jtt-epochs", type=float, default=1.0)
    p.add_argument("--max-length", type=int, default=80)
    p.add_argument("--batch-size", type=int, default=16, help="16: twice the updates of 32 for the same compute")
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is much faster on a shared, busy CPU)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    task = load_task("mnli-small", data_dir=args.data_dir, seed=0, train_size=args.train_size,
                     eval_size=args.eval_size)
    common = dict(save_steps=10 ** 6, logging_steps=25, progress=False, max_length=args.max_length,
                  batch_size=args.batch_size, learning_rate=args.lr)
    objectives = args.objectives.split(",")
    options = {**({"recovery_epochs": args.recovery_epochs} if "rmc" in objectives else {}),
               **({"first_epochs": args.jtt_epochs} if "jtt" in objectives else {})}
    started = time.time()
    sweep = SweepConfig(objectives=objectives, seeds=[int(s) for s in str(args.seeds).split(",")],
                        levels=str(args.sparsities).split(","), objective_options=options,
                        train=TrainConfig(epochs=args.epochs, **common), teacher_epochs=args.teacher_epochs,
                        student_init=args.student_init, progress=False)
    summary = run_sweep(task, sweep, args.out)
    print(render_markdown(summary))
    print(f"wall time {time.time() - started:.0f} s; results in {args.out}/sweep.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
