"""RAHP's Table 1 layout on sst2 → AdvGLUE-sst2 with the bundled MiniLM: vanilla fine-tuning, the
robust fine-tuning baselines (R-Drop, Child-Tuning_D, SMART, FreeLB, ROSE-First / -Second /
-Ensemble, all forgetless objectives) and two pruned models made from the vanilla model with
``forgetless.pipeline.run_and_save`` (importance head pruning ``heads`` and ``rahp``).

Columns: SST-2 dev accuracy, AdvGLUE accuracy, their average, Avg Δ (average minus the vanilla
average), mean CLEVER (a small configuration), parameters, throughput speedup against the
vanilla model (pruned rows, measured by ``compress``; 1.00× for fine-tuning rows), and the time a
method costs per epoch relative to vanilla, measured in the same run. Within each seed the methods
run one after another (A, B, C, …, A, B, C, … over seeds), so each ratio compares neighbours in
time; the load average is recorded beside every timing. Mean ± std over seeds; timing ratios as
median [min, max]. The table's time column is the whole ``fine_tune`` call (pruned rows: the whole
``compress`` call, scoring included); a separate timing phase (``--timing-rounds``) times only the
training loop of each objective on a small fixed set, interleaved over rounds, which is the figure
to trust for "cost per epoch". Usage (time-boxed for 2 shared CPU cores):

    python benchmarks/rahp_table1_baselines.py --data-dir ../shared/data --train-size 1000 --epochs 1 \\
        --seeds 0,1 --threads 1 --out runs/rahp-table1-baselines
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import TrainerCallback

from forgetless.data.tasks import load_task
from forgetless.metrics.accuracy import evaluate_task
from forgetless.metrics.clever import CleverConfig, clever_evaluate
from forgetless.metrics.size import parameter_counts
from forgetless.metrics.speed import SpeedConfig
from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.models.io import save_model
from forgetless.models.loading import load_classifier
from forgetless.registry import OBJECTIVES
from forgetless.training.trainer import TrainConfig, fine_tune

FINE_TUNING_ROWS = [("Vanilla", "ce"), ("R-Drop", "rdrop"), ("Child-Tuning_D", "child-tuning"), ("SMART", "smart"),
                    ("FreeLB", "freelb"), ("ROSE-First", "rose-first"), ("ROSE-Second", "rose-second"),
                    ("ROSE-Ensemble", "rose-ensemble")]
PRUNING_ROWS = [("Importance head pruning", "heads"), ("RAHP", "rahp")]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.2f}] {msg}", flush=True)


def train_config(args, seed: int) -> TrainConfig:
    return TrainConfig(epochs=args.epochs, learning_rate=args.learning_rate, batch_size=args.batch_size, max_length=args.max_length,
                       seed=seed,
                       save_steps=10 ** 9, logging_steps=10 ** 6, progress=False)


def fine_tuning_row(task, objective_name: str, seed: int, args, clever: CleverConfig, work: Path):
    transformers.set_seed(seed)
    model, tokenizer = load_classifier("minilm", task.label_names, seed=seed)
    options = json.loads(args.objective_options).get(objective_name, {})
    objective = OBJECTIVES.get(objective_name)(OBJECTIVES.make_config(objective_name, options))
    folder = work / f"{objective_name}-seed{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    model = fine_tune(model, tokenizer, task.train, folder, train_config(args, seed), objective, resume=False)
    seconds = time.perf_counter() - start
    shutil.rmtree(folder, ignore_errors=True)
    result = evaluate_task(model, tokenizer, task, max_length=args.max_length, progress=False)
    robustness = clever_evaluate(model, tokenizer, task.dev, clever)
    row = {"dev": result["sets"]["dev"]["accuracy"], "advglue": result["sets"]["advglue"]["accuracy"],
           "clever": robustness["mean"], "params": parameter_counts(model)["total"], "speedup": 1.0,
           "seconds_per_epoch": seconds / args.epochs, "load": load}
    return row, model, tokenizer


def pruning_row(task, method: str, teacher_dir: Path, seed: int, args, clever: CleverConfig, work: Path) -> dict:
    from forgetless.config import RunConfig
    from forgetless.pipeline import run_and_save
    from forgetless.registry import METHODS

    options = {"ratio": args.ratio, "scoring_examples": args.scoring_examples}
    config = RunConfig(model="minilm", method=METHODS.make_config(method, options), teacher=str(teacher_dir),
                       train=train_config(args, seed), speed=SpeedConfig(batch_size=32, seq_len=args.max_length,
                                                                          repeats=5),
                       clever=clever, seed=seed, progress=False)
    folder = work / f"{method}-seed{seed}"
    shutil.rmtree(folder, ignore_errors=True)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    card = run_and_save(task, config, folder).card.to_json()
    seconds = time.perf_counter() - start
    sets = card["sets"]
    return {"dev": sets["dev"]["compressed"]["accuracy"], "advglue": sets["advglue"]["compressed"]["accuracy"],
            "clever": card["robustness"]["clever"]["compressed"]["mean"],
            "params": card["params"]["compressed"]["total"],
            "speedup": card["speed"]["throughput_per_s"]["speedup"],
            "seconds_per_epoch": seconds / args.epochs, "load": load}


class LoopTimer(TrainerCallback):
    """Wall time from ``on_train_begin`` (before the objective's own callbacks, e.g. Child-Tuning's
    Fisher pass) to ``on_train_end``: the training loop without model loading and tokenisation."""

    def on_train_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_train_end(self, args, state, control, **kwargs):
        self.seconds = time.perf_counter() - self.start


def timing_rounds(args, names: list[str], seed: int) -> dict[str, list[dict]]:
    """Training-loop seconds per epoch of each objective on a small fixed set, ``--timing-rounds``
    rounds, interleaved (A, B, C, …, A, B, C, …)."""
    task = load_task("sst2", data_dir=args.data_dir, train_size=args.timing_examples, eval_size=16, seed=seed)
    out: dict[str, list[dict]] = {name: [] for name in names}
    for rnd in range(args.timing_rounds):
        for name in names:
            transformers.set_seed(seed)
            model, tokenizer = load_classifier("minilm", task.label_names, seed=seed)
            objective = OBJECTIVES.get(name)(OBJECTIVES.make_config(name, {}))
            folder = Path(args.out) / "work" / f"timing-{name}"
            shutil.rmtree(folder, ignore_errors=True)
            timer = LoopTimer()
            load = os.getloadavg()[0]
            config = train_config(args, seed)
            config.epochs = 1.0
            fine_tune(model, tokenizer, task.train, folder, config, objective, callbacks=[timer], resume=False)
            shutil.rmtree(folder, ignore_errors=True)
            out[name].append({"round": rnd, "seconds": timer.seconds, "load": load})
            log(f"timing round {rnd}: {name} {timer.seconds:.1f} s")
    return out


def timing_table(timings: dict[str, list[dict]], examples: int) -> str:
    base = [r["seconds"] for r in timings["ce"]]
    lines = [f"| objective | training loop, 1 epoch of {examples} examples: median s [min, max] | ratio to vanilla, "
             "per round: median [min, max] | load average (1 min) at start [min, max] |", "|---|---|---|---|"]
    for name, rows in timings.items():
        seconds = [r["seconds"] for r in rows]
        ratios = [s / b for s, b in zip(seconds, base)]
        loads = [r["load"] for r in rows]
        lines.append(f"| {name} | {statistics.median(seconds):.1f} [{min(seconds):.1f}, {max(seconds):.1f}] "
                     f"| {statistics.median(ratios):.2f}× [{min(ratios):.2f}, {max(ratios):.2f}] "
                     f"| [{min(loads):.2f}, {max(loads):.2f}] |")
    return "\n".join(lines) + "\n"


def mean_std(values: list[float]) -> tuple[float, float]:
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def wilson(accuracy: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of an accuracy measured on n examples (one run's sampling error)."""
    centre = (accuracy + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * (accuracy * (1 - accuracy) / n + z * z / (4 * n * n)) ** 0.5
    return centre - half, centre + half


def run_intervals(rows: list[dict], sizes: dict[str, int]) -> str:
    """Each seed's dev and AdvGLUE accuracy with its 95% Wilson interval, e.g. "s0 77.8 [74.9, 80.4] / 32.4 [25.4, 40.3]"."""
    cells = []
    for r in rows:
        parts = [f"{100 * r[name]:.1f} [{100 * wilson(r[name], n)[0]:.1f}, {100 * wilson(r[name], n)[1]:.1f}]"
                 for name, n in sizes.items()]
        cells.append(f"s{r['seed']} " + " / ".join(parts))
    return "; ".join(cells)


def table(results: dict[str, list[dict]], seeds: list[int], sizes: dict[str, int] | None = None) -> str:
    """Markdown: mean ± std over seeds; Avg Δ and time ratios are per seed against vanilla; with ``sizes``
    (examples per evaluation set) a last column gives each run's dev / AdvGLUE interval."""
    vanilla = {r["seed"]: r for r in results["Vanilla"]}
    extra = " dev / AdvGLUE per seed, 95% Wilson interval |" if sizes else ""
    lines = ["| method | SST-2 dev | AdvGLUE | average | Avg Δ vs vanilla | gap dev − AdvGLUE | CLEVER | params (M) "
             "| speedup | fine_tune / compress call time vs vanilla (median [min, max]) |" + extra,
             "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if sizes else "")]
    for label, rows in results.items():
        if not rows:
            continue
        dev = mean_std([100 * r["dev"] for r in rows])
        adv = mean_std([100 * r["advglue"] for r in rows])
        avg = mean_std([50 * (r["dev"] + r["advglue"]) for r in rows])
        delta = mean_std([50 * (r["dev"] + r["advglue"]) - 50 * (vanilla[r["seed"]]["dev"] + vanilla[r["seed"]]["advglue"])
                          for r in rows if r["seed"] in vanilla])
        gap = mean_std([100 * (r["dev"] - r["advglue"]) for r in rows])
        clever = mean_std([r["clever"] for r in rows])
        ratios = [r["seconds_per_epoch"] / vanilla[r["seed"]]["seconds_per_epoch"] for r in rows if r["seed"] in vanilla]
        speed = mean_std([r["speedup"] for r in rows])
        lines.append(f"| {label} | {dev[0]:.1f} ± {dev[1]:.1f} | {adv[0]:.1f} ± {adv[1]:.1f} | {avg[0]:.1f} ± {avg[1]:.1f} "
                     f"| {delta[0]:+.1f} ± {delta[1]:.1f} | {gap[0]:.1f} ± {gap[1]:.1f} | {clever[0]:.3f} ± {clever[1]:.3f} "
                     f"| {rows[0]['params'] / 1e6:.2f} | {speed[0]:.2f}× | "
                     f"{statistics.median(ratios):.2f}× [{min(ratios):.2f}, {max(ratios):.2f}] |"
                     + (f" {run_intervals(rows, sizes)} |" if sizes else ""))
    return "\n".join(lines) + "\n"


def evaluation_sizes(saved_args: dict) -> dict[str, int]:
    """Examples per evaluation set of a saved run (its task rebuilt from its arguments, no training)."""
    task = load_task("sst2", data_dir=saved_args["data_dir"], train_size=saved_args["train_size"],
                     eval_size=saved_args["eval_size"], seed=0)
    return {"dev": len(task.dev), "advglue": len(task.challenges["advglue"])}


def merged_table(saved: list[dict]) -> str:
    """One table from several saved runs (e.g. seed 0 and seed 1 run apart); a seed twice is an error."""
    results: dict[str, list[dict]] = {}
    for run in saved:
        for label, rows in run["results"].items():
            results.setdefault(label, []).extend(rows)
    for label, rows in results.items():
        seeds = [r["seed"] for r in rows]
        if len(seeds) != len(set(seeds)):
            raise SystemExit(f"--table-from: {label} has seed(s) {seeds} more than once")
    keys = {k: saved[0]["args"][k] for k in ("train_size", "epochs", "learning_rate", "batch_size", "eval_size")}
    for run in saved[1:]:
        if {k: run["args"][k] for k in keys} != keys:
            raise SystemExit(f"--table-from: runs with different settings ({keys} vs {run['args']})")
    seeds = sorted({r["seed"] for rows in results.values() for r in rows})
    return table(results, seeds, evaluation_sizes(saved[0]["args"]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--out", default="runs/rahp-table1-baselines")
    p.add_argument("--train-size", type=int, default=1000)
    p.add_argument("--eval-size", type=int, default=None, help="cap of each evaluation set (default: all)")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--learning-rate", type=float, default=2e-4)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seeds", default="0,1")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-length", type=int, default=64)
    p.add_argument("--ratio", type=float, default=0.2, help="share of heads pruned by heads / rahp")
    p.add_argument("--scoring-examples", type=int, default=32)
    p.add_argument("--clever-examples", type=int, default=16)
    p.add_argument("--clever-batches", type=int, default=6)
    p.add_argument("--clever-samples", type=int, default=8)
    p.add_argument("--methods", default=",".join([o for _, o in FINE_TUNING_ROWS] + [m for _, m in PRUNING_ROWS]),
                   help="subset of rows (objective or method names); 'ce' is always run")
    p.add_argument("--objective-options", default="{}",
                   help='JSON {objective: {option: value}}, e.g. \'{"freelb": {"epsilon": 0.03}}\'')
    p.add_argument("--timing-rounds", type=int, default=3, help="interleaved timing rounds (0: none)")
    p.add_argument("--timing-examples", type=int, default=128, help="training examples of a timing epoch")
    p.add_argument("--timing-only", action="store_true", help="only the timing rounds, not the table")
    p.add_argument("--table-from", type=Path, nargs="+",
                   help="re-render the table from the results.json of earlier runs (several: their seeds merged)")
    args = p.parse_args(argv)
    if args.table_from:
        print(merged_table([json.loads(path.read_text()) for path in args.table_from]))
        return 0
    torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    chosen = set(args.methods.split(",")) | {"ce"}
    out = Path(args.out)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    clever = CleverConfig(examples=args.clever_examples, batches=args.clever_batches, samples=args.clever_samples,
                          max_length=args.max_length)
    results: dict[str, list[dict]] = {label: [] for label, _ in FINE_TUNING_ROWS + PRUNING_ROWS}
    errors: list[str] = []
    started = time.perf_counter()
    loads = [os.getloadavg()[0]]
    for seed in ([] if args.timing_only else seeds):
        task = load_task("sst2", data_dir=args.data_dir, train_size=args.train_size, eval_size=args.eval_size, seed=seed)
        teacher_dir = work / f"teacher-seed{seed}"
        for label, name in FINE_TUNING_ROWS:
            if name not in chosen:
                continue
            log(f"seed {seed}: {label}")
            row, model, tokenizer = fine_tuning_row(task, name, seed, args, clever, work)
            if name == "ce":
                save_model(model, teacher_dir, tokenizer, metadata={"role": "teacher", "seed": seed})
            results[label].append({"seed": seed, **row})
            loads.append(os.getloadavg()[0])
            log(f"  {json.dumps(row)}")
        for label, method in PRUNING_ROWS:
            if method not in chosen:
                continue
            log(f"seed {seed}: {label} ({method}, ratio {args.ratio})")
            try:
                row = pruning_row(task, method, teacher_dir, seed, args, clever, work)
            except Exception as exc:  # the pipeline is being refactored: report what works
                errors.append(f"{label}, seed {seed}: {type(exc).__name__}: {exc}")
                log(f"  FAILED {errors[-1]}")
                continue
            results[label].append({"seed": seed, **row})
            loads.append(os.getloadavg()[0])
            log(f"  {json.dumps(row)}")
        atomic_write_json(out / "results.json", {"args": vars(args), "results": results, "errors": errors})
    text = table(results, seeds) if not args.timing_only else ""
    if args.timing_rounds > 0:
        timings = timing_rounds(args, [n for _, n in FINE_TUNING_ROWS if n in chosen], seeds[0])
        atomic_write_json(out / "timing.json", timings)
        text += "\n" + timing_table(timings, args.timing_examples)
    minutes = (time.perf_counter() - started) / 60
    command = "python benchmarks/rahp_table1_baselines.py " + " ".join(argv if argv is not None else sys.argv[1:])
    footer = (f"\nSeeds {seeds}; {minutes:.1f} min wall; load average (1 min) during the run: median "
              f"{statistics.median(loads):.2f} [{min(loads):.2f}, {max(loads):.2f}]; torch threads {args.threads}.\n"
              f"Command: `{command}`\n")
    if errors:
        footer += "\nFailed rows:\n" + "".join(f"- {e}\n" for e in errors)
    atomic_write_text(out / "table.md", text + footer)
    atomic_write_json(out / "results.json", {"args": vars(args), "results": results, "errors": errors,
                                             "minutes": minutes, "loads": loads})
    print(text + footer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
