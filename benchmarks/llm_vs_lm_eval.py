"""forgetless's LLM scoring vs ``lm_eval.simple_evaluate`` on SmolLM2-135M-Instruct, on the same items of
the six offline zero-shot tasks (the YAMLs of ``forgetless/llm/tasks``): is it faster, and are the
numbers lm-eval's?

Each run is a fresh process (model load included, timed apart), the two tools alternating (A, B, B,
A, …), the 1-minute load average sampled every 5 s while each runs:

* ``lm-eval``: lm-eval on its own: ``TaskManager`` over the shipped YAMLs, ``HFLM`` on the model,
  ``simple_evaluate(..., samples=the items, log_samples=True)``;
* ``forgetless``: the same items through forgetless's suite (``llm/suite.evaluate_tasks``): the same
  ``simple_evaluate`` on forgetless's ``LM`` with shared-context scoring (``llm/scoring.py``).

Both at the same batch size (requests per forward) and window (2048). Reported: the scoring time of
each run (``simple_evaluate`` alone) and its process, the ratio of the medians, every choice's
|Δ log-likelihood| (max per task), the items whose acc / acc_norm decision differs outside near ties
(must be 0) and the near ties, each run's peak resident memory.

``--fp64-check TASK`` asks whose fp32 log-likelihoods are nearer the truth: lm-eval's and forgetless's
against the same model in float64 (every choice run alone). ``--suite-memory`` instead measures the peak memory of forgetless's whole default suite on SmolLM2
(``CausalLMKind.evaluate`` on ``llm-zero-shot --eval-size N``: the tasks and the WikiText-2 windows) for
one or more source trees (``--source DIR``; e.g. ``git archive e93cbe0`` unpacked, the code before
issue 40), one fresh process each.

    python benchmarks/llm_vs_lm_eval.py --data-dir ../shared/data --items 500 --repeats 2 --out runs/bench-llm
    python benchmarks/llm_vs_lm_eval.py --data-dir ../shared/data --suite-memory --items 8 --source /tmp/before
    python benchmarks/llm_vs_lm_eval.py --data-dir ../shared/data --fp64-check piqa_offline --items 50
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TASKS = ["arc_easy_offline", "arc_challenge_offline", "hellaswag_offline", "piqa_offline", "winogrande_offline",
         "openbookqa_offline"]
WINDOW = 2048


def side(args) -> None:
    """One run of one tool (a child process): its records, timings and peak memory → ``args.records``."""
    from forgetless.metrics.memory import status_bytes
    from forgetless.models.loading import load_causal_lm

    items = json.loads(Path(args.samples).read_text())
    start = time.perf_counter()
    model, tokenizer = load_causal_lm("smollm2")
    loaded, cpu = time.perf_counter(), time.process_time()
    records = lm_eval_side(model, tokenizer, items, args) if args.side == "lm-eval" else \
        forgetless_side(model, tokenizer, items, args)
    Path(args.records).write_text(json.dumps({"load_s": loaded - start, "score_s": time.perf_counter() - loaded,
                                              "score_cpu_s": time.process_time() - cpu,
                                              "peak_rss_mib": status_bytes("VmHWM") / 2 ** 20, "records": records}))


def lm_eval_side(model, tokenizer, items: dict, args) -> dict:
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from forgetless.llm.engine import TASKS_DIR

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False,
                          metadata={"data_dir": str(Path(args.data_dir).resolve())})
    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=args.batch_size, max_length=WINDOW)
    out = simple_evaluate(model=lm, tasks=list(items), task_manager=manager, samples=items, log_samples=True,
                          bootstrap_iters=0)
    return {name: [{"doc": s["doc_id"], "ll": [float(r[0]) for r in s["filtered_resps"]], "acc": s["acc"],
                    "acc_norm": s.get("acc_norm")} for s in sorted(out["samples"][name], key=lambda s: s["doc_id"])]
            for name in items}


def forgetless_side(model, tokenizer, items: dict, args) -> dict:
    from forgetless.llm.engine import TASKS_DIR
    from forgetless.llm.suite import build_suite, evaluate_tasks

    suite = build_suite(list(items), TASKS_DIR, args.data_dir, False, None, WINDOW)
    suite = suite.restricted(items, perplexity=False).capped(None, 0)  # the items checked, as load_task checks them
    result = evaluate_tasks(model, tokenizer, suite, WINDOW, args.batch_size, progress=False)
    return {name: result["predictions"][name]["items"] for name in items}


def fp64_check(args) -> None:
    """``--fp64-check TASK``: whose fp32 log-likelihoods are nearer the truth? lm-eval's (HFLM) and
    forgetless's (shared-context) against the same model in float64, every choice run alone."""
    import torch

    from lm_eval.models.huggingface import HFLM

    from forgetless.data.tasks import load_task
    from forgetless.llm import scoring
    from forgetless.llm.lm import ForgetlessLM
    from forgetless.models.loading import load_causal_lm

    model, tokenizer = load_causal_lm("smollm2")
    task = load_task("llm-zero-shot", data_dir=args.data_dir, eval_size=args.items, seed=0)
    lm_task = task.suite.tasks[args.fp64_check]
    lm_task.build_all_requests(samples=task.suite.sets[args.fp64_check].items)
    requests = lm_task.instances
    rows = [ForgetlessLM(model, tokenizer, WINDOW, args.batch_size).row(*r.args) for r in requests]
    theirs = [ll for ll, _ in HFLM(pretrained=model, tokenizer=tokenizer, batch_size=args.batch_size,
                                   max_length=WINDOW).loglikelihood(requests, disable_tqdm=True)]
    ours = [v[0] for g in scoring.score_groups(model, _groups(requests, rows), args.batch_size) for v in g]
    model.double()
    with torch.no_grad():
        truth = [float(model(input_ids=torch.tensor([r.full[:-1]])).logits[0, -r.scored:].log_softmax(-1)
                       .gather(-1, torch.tensor(r.full[-r.scored:])[:, None]).sum()) for r in rows]
    report = {"task": args.fp64_check, "choices": len(rows), "max_scored_tokens": max(r.scored for r in rows)}
    for name, values in (("lm-eval", theirs), ("forgetless", ours)):
        report[f"{name}_vs_fp64_max"] = max(abs(a - b) for a, b in zip(values, truth))
        report[f"{name}_vs_fp64_per_token_max"] = max(abs(a - b) / r.scored for a, b, r in zip(values, truth, rows))
    print(json.dumps(report), flush=True)


def _groups(requests, rows) -> list:
    """Rows grouped by item, in request order (the requests of one item are consecutive)."""
    groups, last = [], None
    for request, row in zip(requests, rows):
        if request.doc_id != last:
            groups.append([])
            last = request.doc_id
        groups[-1].append(row)
    return groups


def suite_memory(args) -> None:
    """A child of ``--suite-memory``: forgetless's default suite on SmolLM2, its peak resident memory."""
    from forgetless.config import EvalConfig
    from forgetless.data.tasks import load_task
    from forgetless.kinds.causal_lm import CausalLMKind
    from forgetless.metrics.memory import status_bytes
    from forgetless.models.loading import load_causal_lm

    model, tokenizer = load_causal_lm("smollm2")
    task = load_task("llm-zero-shot", data_dir=args.data_dir, eval_size=args.items, seed=0)
    start = time.perf_counter()
    result = CausalLMKind().evaluate(model, tokenizer, task, EvalConfig(batch_size=64), 128, False)
    lm = result.get("language_model") or {}
    print(json.dumps({"source": os.environ["PYTHONPATH"], "peak_rss_mib": round(status_bytes("VmHWM") / 2 ** 20),
                      "evaluate_s": round(time.perf_counter() - start), "tasks": sorted(result["sets"]),
                      "items": {n: s["n"] for n, s in result["sets"].items()}, "windows": lm.get("windows"),
                      "perplexity": lm.get("perplexity")}), flush=True)


def timed(command: list[str], log: Path) -> dict:
    """Wall time of one process and the load average sampled every 5 s while it runs."""
    loads, done = [os.getloadavg()[0]], threading.Event()

    def sample():
        while not done.wait(5):
            loads.append(os.getloadavg()[0])

    threading.Thread(target=sample, daemon=True).start()
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGETLESS_CACHE": str(log.with_suffix(".cache"))}
    with open(log, "w") as handle:
        code = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode
    done.set()
    if code:
        raise SystemExit(f"{command[:4]} failed (exit {code}); see {log}")
    return {"seconds": time.perf_counter() - start, "load_mean": statistics.mean(loads), "load_max": max(loads)}


def compare(ours: dict, theirs: dict) -> dict:
    """Per task: max |Δ log-likelihood| over every choice, decisions that differ outside / inside near ties."""
    from forgetless.llm.records import near_tie

    report = {}
    for name, records in ours.items():
        other = {r["doc"]: r for r in theirs[name]}
        worst, per_token, differ, ties, tied_differ = 0.0, 0.0, 0, 0, 0
        for r in records:
            o = other[r["doc"]]
            worst = max([worst] + [abs(a - b) for a, b in zip(r["ll"], o["ll"])])
            per_token = max([per_token] + [abs(a - b) / n for a, b, n in zip(r["ll"], o["ll"], r["tokens"])])
            for metric in ("acc", "acc_norm") if o.get("acc_norm") is not None else ("acc",):
                tie = near_tie(r, metric)
                ties += tie
                differ += r[metric] != o[metric] and not tie
                tied_differ += r[metric] != o[metric] and tie
        report[name] = {"items": len(records), "max_abs_delta_ll": worst, "max_per_token": per_token,
                        "differ_outside_ties": differ,
                        "near_ties": ties, "differ_at_ties": tied_differ}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--items", type=int, default=50, help="items per task (seeded, forgetless's selection)")
    parser.add_argument("--batch-size", type=int, default=32, help="requests (rows) per forward, both tools")
    parser.add_argument("--repeats", type=int, default=2, help="pairs of runs")
    parser.add_argument("--out", default="runs/bench-llm")
    parser.add_argument("--suite-memory", action="store_true")
    parser.add_argument("--fp64-check", metavar="TASK", help="lm-eval's and forgetless's log-likelihoods vs float64")
    parser.add_argument("--source", action="append", help="--suite-memory: a forgetless source tree (repeatable)")
    parser.add_argument("--side", choices=("lm-eval", "forgetless", "suite"), help=argparse.SUPPRESS)
    parser.add_argument("--samples", help=argparse.SUPPRESS)
    parser.add_argument("--records", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "suite":
        return suite_memory(args)
    if args.side:
        return side(args)
    if args.fp64_check:
        return fp64_check(args)
    if args.suite_memory:
        for source in args.source or [str(ROOT)]:
            command = [sys.executable, __file__, "--side", "suite", "--data-dir", args.data_dir, "--items", str(args.items)]
            print("runs:", f"PYTHONPATH={source}", " ".join(command), flush=True)
            env = {**os.environ, "PYTHONPATH": source, "FORGETLESS_CACHE": str(Path(args.out) / "suite.cache")}
            before = os.getloadavg()
            subprocess.run(command, env=env, check=True)
            print(f"load average before: {before}, after: {os.getloadavg()}", flush=True)
        return None
    run_pairs(args)


def run_pairs(args) -> None:
    from forgetless.data.tasks import load_task

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    task = load_task("llm-zero-shot", data_dir=args.data_dir, eval_size=args.items, seed=0)
    samples = out / "samples.json"
    samples.write_text(json.dumps({n: task.suite.sets[n].items for n in TASKS}))
    runs = []
    for repeat in range(args.repeats):
        for tool in ("lm-eval", "forgetless") if repeat % 2 == 0 else ("forgetless", "lm-eval"):
            records = out / f"{tool}-{repeat}.json"
            command = [sys.executable, __file__, "--side", tool, "--data-dir", args.data_dir, "--samples", str(samples),
                       "--batch-size", str(args.batch_size), "--records", str(records)]
            print("runs:", " ".join(command), flush=True)
            run = {"tool": tool, "repeat": repeat, **timed(command, records.with_suffix(".log"))}
            kept = json.loads(records.read_text())
            run.update({k: kept[k] for k in ("load_s", "score_s", "score_cpu_s", "peak_rss_mib")})
            runs.append(run)
            print(json.dumps(run), flush=True)
    check = compare(json.loads((out / "forgetless-0.json").read_text())["records"],
                    json.loads((out / "lm-eval-0.json").read_text())["records"])
    write_results(out, args, runs, check)


def write_results(out: Path, args, runs: list[dict], check: dict) -> None:
    lines = ["# forgetless's shared-context scoring vs lm_eval.simple_evaluate, SmolLM2-135M-Instruct", "",
             f"`python benchmarks/llm_vs_lm_eval.py --data-dir {args.data_dir} --items {args.items} --batch-size "
             f"{args.batch_size} --repeats {args.repeats}`; {os.cpu_count()} CPUs.", "",
             "| run | tool | scoring s (wall) | scoring CPU s | process s | model load s | peak MiB | load mean (max) |",
             "|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        lines.append(f"| {r['repeat']} | {r['tool']} | {r['score_s']:.1f} | {r['score_cpu_s']:.1f} | {r['seconds']:.1f} | "
                     f"{r['load_s']:.1f} | {r['peak_rss_mib']:.0f} | {r['load_mean']:.2f} ({r['load_max']:.2f}) |")
    lines.append("")
    for key, what in (("score_s", "wall"), ("score_cpu_s", "CPU")):
        median = {t: statistics.median(r[key] for r in runs if r["tool"] == t) for t in ("lm-eval", "forgetless")}
        lines.append(f"Scoring {what} time, median: lm-eval {median['lm-eval']:.1f} s, forgetless "
                     f"{median['forgetless']:.1f} s: **forgetless {median['lm-eval'] / median['forgetless']:.2f}× "
                     "faster**.")
    lines += ["",
              "| task | items | max \\|Δ log-likelihood\\| (nats) | per scored token | decisions differing outside "
              "near ties | near ties (acc + acc_norm) | differing at a near tie |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name, c in check.items():
        lines.append(f"| {name} | {c['items']} | {c['max_abs_delta_ll']:.2e} | {c['max_per_token']:.1e} | "
                     f"{c['differ_outside_ties']} | "
                     f"{c['near_ties']} | {c['differ_at_ties']} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps({"runs": runs, "check": check}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
