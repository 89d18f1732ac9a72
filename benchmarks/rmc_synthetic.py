"""Table 7 of Du et al. ("What do Compressed Large Language Models Forget?") on the built-in
synthetic shortcut task: Vanilla (ce) / Distil / Smooth / Focal / JTT / RMC guiding iterative
magnitude pruning to 40% sparsity, over several seeds; plus the agreement of the variance-based
difficulty split with the task's ground-truth easy/hard flags.

    python benchmarks/rmc_synthetic.py --out runs/rmc-synthetic            # per seed ~10 min on 2 idle CPU cores

Writes ``<out>/sweep.md`` (table), ``sweep.json`` and the plots; re-running reuses finished runs.
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
    p.add_argument("--out", default="runs/rmc-synthetic")
    p.add_argument("--objectives", default=",".join(SweepConfig().objectives))
    p.add_argument("--seeds", default="0,1,2", help="paper: 3 seeds")
    p.add_argument("--sparsities", default="0.4")
    p.add_argument("--n-train", type=int, default=1500)
    p.add_argument("--n-dev", type=int, default=500)
    p.add_argument("--n-challenge", type=int, default=600)
    p.add_argument("--hard-fraction", type=float, default=0.1)
    p.add_argument("--epochs", type=float, default=2.0, help="student (pruning-aware) training epochs")
    p.add_argument("--teacher-epochs", type=float, default=2.0)
    p.add_argument("--student-init", default="pretrained", choices=["pretrained", "teacher"])
    p.add_argument("--recovery-epochs", type=float, default=0.5, help="difficulty: recovery fine-tune per level")
    p.add_argument("--jtt-epochs", type=float, default=1.0, help="JTT: epochs of the identification model")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 is much faster on a shared, busy CPU)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)

    task = load_task("synthetic", seed=0, n_train=args.n_train, n_dev=args.n_dev, n_challenge=args.n_challenge,
                     hard_fraction=args.hard_fraction)
    train = TrainConfig(epochs=args.epochs, save_steps=10 ** 6, logging_steps=25, progress=False)
    objectives = args.objectives.split(",")
    options = {**({"recovery_epochs": args.recovery_epochs} if "rmc" in objectives else {}),
               **({"first_epochs": args.jtt_epochs} if "jtt" in objectives else {})}
    started = time.time()
    sweep = SweepConfig(objectives=objectives, seeds=[int(s) for s in str(args.seeds).split(",")],
                        levels=str(args.sparsities).split(","), objective_options=options, train=train,
                        teacher_epochs=args.teacher_epochs, student_init=args.student_init, progress=False)
    summary = run_sweep(task, sweep, args.out)
    print(render_markdown(summary))
    print(f"wall time {time.time() - started:.0f} s; results in {args.out}/sweep.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
