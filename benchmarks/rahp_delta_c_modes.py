"""Benchmark: RAHP ΔC (eq. 2) computed exactly, first-order and hybrid (methods/rahp/fast_delta_c.py).

Bundled MiniLM (6 × 12 heads), optionally with a briefly fine-tuned classification head
(``--finetune-steps`` steps of batch 32 on the task's training set), scoring sets drawn from the
training sets of SST-2 (short sentences) and QNLI (question + sentence pairs; only pairs that
fill all ``--max-length`` tokens are used, so every batch is full-length).

Per set, interleaved in each repeat (first-order, hybrid, exact, first-order, …) on the same
``n_exact`` examples: ΔC time of each mode; first-order also on ``--n`` examples (the issue's
512). Where ``n_exact`` < ``--n`` the exact and hybrid times at ``--n`` are reported as scaled
estimates (× n / n_exact, marked "scaled"). Fisher (needed by hybrid and by every decision) is
timed once and reported apart. Quality against exact: Spearman of first-order vs exact ΔC, and
the overlap of the pruned sets (RAHP eq. 5 selection, γ protected) at each ρ, for first-order
and for hybrid run for that ρ. The load average is printed with every measurement.

    python benchmarks/rahp_delta_c_modes.py --data-dir ../shared/data --threads 1
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr

from forgetless.data.tasks import load_task
from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.methods._shared.calibration import scoring_batches, scoring_subset
from forgetless.methods.rahp.config import RahpConfig
from forgetless.methods.rahp.fast_delta_c import first_order_delta_c_scores, hybrid_delta_c, refine_near_cut
from forgetless.methods.rahp.model_scoring import delta_c_scores, fisher_scores
from forgetless.methods.rahp.scores import count_from_ratio, rahp_select
from forgetless.models.loading import load_classifier
from forgetless.training.encode import encode
from forgetless.training.trainer import TrainConfig, fine_tune


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] load {os.getloadavg()[0]:.2f} | {msg}", flush=True)


def full_length(examples, tokenizer, max_length: int):
    """The examples whose encoding fills ``max_length`` tokens (pairs truncated to it)."""
    rows = encode(examples, tokenizer, max_length)
    keep = [r["index"] for r in rows if len(r["input_ids"]) >= max_length]
    return examples.subset(keep, f"{examples.name}-full{max_length}")


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def spread(times: list[float]) -> str:
    med = statistics.median(times)
    return f"{med:.1f} s ({min(times):.1f}-{max(times):.1f}, n={len(times)})"


def pruned(delta_c: torch.Tensor, fisher: torch.Tensor, ratio: float, cfg: RahpConfig) -> set[int]:
    mask = rahp_select(delta_c, fisher, ratio, cfg.alpha, cfg.beta, cfg.protect, cfg.eps)["pruned"]
    return set(mask.nonzero().flatten().tolist())


def bench_set(name: str, args, cfg: RahpConfig) -> dict:
    task = load_task(name, data_dir=args.data_dir, seed=0)
    model, tokenizer = load_classifier("minilm", task.label_names)
    model.eval()
    if args.finetune_steps:
        with tempfile.TemporaryDirectory() as tmp:
            _, secs = timed(lambda: fine_tune(model, tokenizer, task.train, tmp, TrainConfig(
                max_steps=args.finetune_steps, batch_size=32, max_length=args.max_length, progress=False,
                save_steps=10 ** 6), resume=False))
        log(f"{name}: fine-tuned {args.finetune_steps} steps × 32 in {secs:.0f} s")
    pool = full_length(task.train, tokenizer, args.max_length) if name in args.long else task.train
    n_exact = args.n_exact.get(name, args.n)
    big = scoring_subset(pool, args.n, seed=0)
    small = scoring_subset(big, n_exact, seed=1) if n_exact < len(big) else big
    b_big = scoring_batches(tokenizer, big, args.batch, args.max_length)
    b_small = scoring_batches(tokenizer, small, args.batch, args.max_length)
    tokens = sum(int(b["input_ids"].numel()) for b in b_big) / len(big)
    log(f"{name}: {len(big)} examples ({tokens:.1f} padded tokens each), exact on {len(small)}")
    fisher, t_fisher = timed(lambda: fisher_scores(model, b_small))
    log(f"{name}: Fisher on {len(small)} in {t_fisher:.1f} s")
    times = {"first-order@n": [], "first-order": [], "hybrid": [], "exact": []}
    results = {}
    for rep in range(args.repeats):
        (fo, _), t = timed(lambda: first_order_delta_c_scores(model, b_small, cfg.eps))
        times["first-order"].append(t)
        log(f"{name} rep {rep}: first-order on {len(small)}: {t:.1f} s")
        hyb, t = timed(lambda: hybrid_delta_c(model, b_small, fisher, args.target_ratio, cfg.alpha, cfg.beta,
                                              cfg.protect, args.window, cfg.eps, cfg.rows_per_pass,
                                              extremes=args.extremes))
        times["hybrid"].append(t)
        log(f"{name} rep {rep}: hybrid (ρ={args.target_ratio}, w={args.window}, e={args.extremes}) on {len(small)}: {t:.1f} s, "
            f"{len(hyb['exact'])} heads exact in {hyb['iterations']} rounds")
        (exact, _), t = timed(lambda: delta_c_scores(model, b_small, cfg.eps, cfg.rows_per_pass))
        times["exact"].append(t)
        log(f"{name} rep {rep}: exact on {len(small)}: {t:.1f} s")
        if len(big) > len(small):
            _, t = timed(lambda: first_order_delta_c_scores(model, b_big, cfg.eps))
            times["first-order@n"].append(t)
            log(f"{name} rep {rep}: first-order on {len(big)}: {t:.1f} s")
        results = {"fo": fo, "hybrid": hyb, "exact": exact}
    if not times["first-order@n"]:
        times["first-order@n"] = times["first-order"]
    fo, exact = results["fo"], results["exact"]
    rows = []
    for ratio in args.ratios:
        k = count_from_ratio(ratio, fisher.numel())
        ref = pruned(exact, fisher, ratio, cfg)
        if ratio == args.target_ratio:
            hyb, t_extra = results["hybrid"], None
        else:  # reuse the first-order vector: only the exact part of hybrid is timed here
            hyb, t_extra = timed(lambda: hybrid_delta_c(model, b_small, fisher, ratio, cfg.alpha, cfg.beta,
                                                        cfg.protect, args.window, cfg.eps, cfg.rows_per_pass,
                                                        first_order=fo, extremes=args.extremes))
        rows.append({"ratio": ratio, "k": k, "fo": len(pruned(fo, fisher, ratio, cfg) & ref),
                     "hybrid": len(pruned(hyb["delta_c"], fisher, ratio, cfg) & ref),
                     "exact_heads": len(hyb["exact"]), "extra_seconds": t_extra})
        log(f"{name}: ρ={ratio} K={k}: first-order {rows[-1]['fo']}/{k}, hybrid {rows[-1]['hybrid']}/{k} "
            f"({len(hyb['exact'])} exact heads)")
    rho = float(spearmanr(fo.numpy(), exact.numpy()).statistic)
    sweep = []  # hybrid replayed with exact values looked up in the exact run (no new model passes)
    lookup = lambda heads: {h: float(exact[h]) for h in heads}  # noqa: E731
    for window, extremes in [(w, e) for w in args.window_sweep for e in args.extremes_sweep]:
        for ratio in args.ratios:
            out = refine_near_cut(fo, fisher, ratio, cfg.alpha, cfg.beta, cfg.protect, window, lookup, cfg.eps,
                                  extremes)
            sweep.append({"window": window, "extremes": extremes, "ratio": ratio, "exact_heads": len(out["exact"]),
                          "same": len(pruned(out["delta_c"], fisher, ratio, cfg) & pruned(exact, fisher, ratio, cfg)),
                          "k": count_from_ratio(ratio, fisher.numel())})
    if args.dump:
        atomic_write_json(Path(f"{args.dump}-{name}.json"), {
            "first_order": fo.tolist(), "exact": exact.tolist(), "fisher": fisher.tolist(),
            "hybrid": results["hybrid"]["delta_c"].tolist(), "hybrid_exact": sorted(results["hybrid"]["exact"])})
    return {"name": name, "n": len(big), "n_exact": len(small), "tokens": tokens, "times": times,
            "fisher": t_fisher, "spearman": rho, "rows": rows, "heads": fisher.numel(), "sweep": sweep}


def table(results: list[dict], args, load_before, load_after) -> str:
    out = ["# RAHP ΔC: exact vs first-order vs hybrid (MiniLM-L6, 72 heads)", "",
           f"Command: `python {' '.join(sys.argv)}`", "",
           f"torch threads {torch.get_num_threads()}; load average (1, 5, 15 min) before "
           f"{', '.join(f'{x:.2f}' for x in load_before)}, after {', '.join(f'{x:.2f}' for x in load_after)}; "
           f"classification head: {'fine-tuned ' + str(args.finetune_steps) + ' steps × 32' if args.finetune_steps else 'untrained (seeded)'}; "
           f"hybrid window w = {args.window}, extremes e = {args.extremes} at ρ = {args.target_ratio}, γ = {RahpConfig().protect}; "
           f"median (min-max) over {args.repeats} interleaved repeats.", "",
           "| set | n (tokens/ex) | first-order @ n | exact @ n_exact | hybrid @ n_exact | first-order @ n_exact "
           "| hybrid / exact | exact @ n | hybrid @ n | Spearman fo vs exact | Fisher @ n_exact |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        t = r["times"]
        med = {k: statistics.median(v) for k, v in t.items()}
        scale = r["n"] / r["n_exact"]
        note = " (scaled)" if scale > 1 else ""
        out.append(f"| {r['name']} | {r['n']} ({r['tokens']:.0f}) | {spread(t['first-order@n'])} | "
                   f"{spread(t['exact'])} (n={r['n_exact']}) | {spread(t['hybrid'])} | {spread(t['first-order'])} | "
                   f"{med['hybrid'] / med['exact']:.2f} | {med['exact'] * scale:.0f} s{note} | "
                   f"{med['hybrid'] * scale:.0f} s{note} | {r['spearman']:.3f} | {r['fisher']:.1f} s |")
    out += ["", "Pruned set overlap with exact mode (heads in common / K); hybrid is run for each ρ "
            "(its window sits at that ρ's cut); 'exact heads' = heads whose ΔC hybrid computed exactly.", "",
            "| set | ρ | K | first-order ∩ exact | hybrid ∩ exact | exact heads (hybrid) |", "|---|---|---|---|---|---|"]
    for r in results:
        for row in r["rows"]:
            out.append(f"| {r['name']} | {row['ratio']} | {row['k']} | {row['fo']}/{row['k']} | "
                       f"{row['hybrid']}/{row['k']} | {row['exact_heads']} of {r['heads']} |")
    if args.window_sweep:
        out += ["", "Window sweep: hybrid's fixed point replayed on the exact run's values (same arithmetic as "
                "`hybrid_delta_c`, no extra model passes): heads computed exactly and pruned heads shared with exact "
                "mode, per window w, extremes e and ρ.", "",
                "| set | w | e | " + " | ".join(f"ρ={r}: exact heads, ∩ exact" for r in args.ratios) + " |",
                "|---|---|---|" + "---|" * len(args.ratios)]
        for r in results:
            for window, extremes in [(w, e) for w in args.window_sweep for e in args.extremes_sweep]:
                cells = [f"{x['exact_heads']}, {x['same']}/{x['k']}" for x in r["sweep"]
                         if x["window"] == window and x["extremes"] == extremes]
                out.append(f"| {r['name']} | {window} | {extremes} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--sets", default="sst2,qnli")
    parser.add_argument("--long", default="qnli", help="sets whose scoring examples must fill --max-length")
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--n-exact", default="sst2:512,qnli:128", help="examples for exact / hybrid, per set")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--ratios", default="0.2,0.4,0.6")
    parser.add_argument("--target-ratio", type=float, default=0.6)
    parser.add_argument("--window", type=int, default=RahpConfig().hybrid_window)
    parser.add_argument("--extremes", type=int, default=RahpConfig().hybrid_extremes)
    parser.add_argument("--window-sweep", default="2,3,4,5,6,8", help="windows replayed on the exact values")
    parser.add_argument("--extremes-sweep", default="1,2", help="extremes replayed on the exact values")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=64)
    parser.add_argument("--finetune-steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--dump", default="", help="prefix of JSON files with the ΔC / Fisher vectors per set")
    parser.add_argument("--out", default=str(Path(__file__).with_name("rahp_delta_c_modes_results.md")))
    args = parser.parse_args()
    args.sets = args.sets.split(",")
    args.long = set(args.long.split(",")) if args.long else set()
    args.ratios = [float(r) for r in args.ratios.split(",")]
    args.window_sweep = [int(w) for w in args.window_sweep.split(",") if w]
    args.extremes_sweep = [int(e) for e in args.extremes_sweep.split(",") if e]
    args.n_exact = {k: int(v) for k, v in (item.split(":") for item in args.n_exact.split(",") if item)}
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    np.random.seed(0)
    cfg = RahpConfig(ratio=args.target_ratio, hybrid_window=args.window, hybrid_extremes=args.extremes)
    load_before = os.getloadavg()
    results = [bench_set(name, args, cfg) for name in args.sets]
    text = table(results, args, load_before, os.getloadavg())
    print(text)
    atomic_write_text(Path(args.out), text)


if __name__ == "__main__":
    main()
