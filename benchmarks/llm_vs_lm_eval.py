"""forgetless's LLM evaluation vs the ``lm_eval`` command line on SmolLM2-135M-Instruct, with the same
task YAMLs (``forgetless/llm/tasks``), the same items and batch sizes: are the numbers the same, item
by item, and what does forgetless's evaluation cost next to lm-eval itself?

Two groups, each timed as one process per tool (model load included), interleaved A, B, B, A, …
with the load average before and after each run:

* multiple choice: the six zero-shot tasks, ``--items`` seeded items each (forgetless's selection),
  batch ``--batch-size``;
* perplexity: lm-eval's ``wikitext`` on ``--docs`` seeded documents, batch 1 (forgetless's rolling
  batch for 2048-token windows at that batch size).

forgetless's side is what a run does (``llm/suite.py``): build the suite, ``lm_eval.simple_evaluate``
on the model object, per-item records, the paired analysis of the card (``report/llm_section.py``,
here the model against itself). lm-eval's side is ``python -m lm_eval run --model hf`` with
``--log_samples`` (its standard errors of these metrics are closed-form, no bootstrap; forgetless
asks lm-eval for none and computes its own bootstrap intervals in the paired analysis). The WikiText-2
perplexity of the papers' protocol (``metrics/perplexity.py``) is not part of lm-eval and not timed
here.

    python benchmarks/llm_vs_lm_eval.py --data-dir ../shared/data --items 100 --docs 6 --repeats 2 \\
        --out runs/bench-llm        # writes runs/bench-llm/results.md and results.json
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
MULTIPLE_CHOICE = ["arc_easy_offline", "arc_challenge_offline", "hellaswag_offline", "piqa_offline",
                   "winogrande_offline", "openbookqa_offline"]
ROLLING = ["wikitext_offline"]
WINDOW = 2048


def forgetless_side(args) -> None:
    """One forgetless evaluation (the subprocess of tool B): records → ``args.records``."""
    from forgetless.kinds.causal_lm import CausalLMKind
    from forgetless.llm.engine import TASKS_DIR
    from forgetless.llm.suite import build_suite
    from forgetless.models.loading import load_causal_lm
    from forgetless.report.llm_section import llm_section

    samples = json.loads(Path(args.samples).read_text())
    model, tokenizer = load_causal_lm(args.model)
    suite = build_suite(list(samples), TASKS_DIR, args.data_dir, False, None, WINDOW)
    for name, items in samples.items():
        suite.sets[name].items = items
    result = CausalLMKind().evaluate_suite(model, tokenizer, suite, args.batch_size, progress=False)
    task = type("T", (), {"suite": suite})()
    llm_section(task, {"base": result, "compressed": result}, {"base": result["predictions"],
                                                               "compressed": result["predictions"]})
    Path(args.records).write_text(json.dumps(result["predictions"]))


def lm_eval_command(model: str, names: list[str], samples: Path, batch: int, data_dir: str, out: Path) -> list[str]:
    from forgetless.llm.engine import TASKS_DIR

    return [sys.executable, "-m", "lm_eval", "run", "--model", "hf", "--model_args",
            f"pretrained={model},dtype=float32,max_length={WINDOW}", "--tasks", ",".join(names), "--include_path",
            str(TASKS_DIR), "--metadata", json.dumps({"data_dir": str(Path(data_dir).resolve())}), "--samples",
            samples.read_text(), "--batch_size", str(batch), "--device", "cpu", "--log_samples", "--output_path",
            str(out)]


def timed(command: list[str], log: Path) -> dict:
    """Wall time of one process; its own empty forgetless cache, so nothing is reused between runs."""
    before = os.getloadavg()[0]
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGETLESS_CACHE": str(log.with_suffix(".cache"))}
    with open(log, "w") as handle:
        code = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode
    seconds = time.perf_counter() - start
    if code:
        raise SystemExit(f"{command[:4]} failed (exit {code}); see {log}")
    return {"seconds": seconds, "load_before": before, "load_after": os.getloadavg()[0]}


def lm_eval_records(folder: Path, names: list[str]) -> dict:
    """Per task, lm-eval's logged samples (doc id → filtered responses and acc / acc_norm)."""
    out = {}
    for name in names:
        path = sorted(glob.glob(str(folder / "**" / f"samples_{name}_*.jsonl"), recursive=True))[-1]
        out[name] = {s["doc_id"]: s for s in map(json.loads, Path(path).read_text().splitlines())}
    return out


def same_numbers(ours: dict, theirs: dict) -> dict:
    """Items, log-likelihoods and per-item metrics that differ between the two tools, per task."""
    report = {}
    for name, records in ours.items():
        differ = 0
        for record in records["items"]:
            sample = theirs[name][record["doc"]]
            if records["output_type"] == "multiple_choice":
                lls = [float(r[0]) for r in sample["filtered_resps"]]
                same = lls == record["ll"] and record["acc"] == sample["acc"] and \
                    record.get("acc_norm") == sample.get("acc_norm")
            else:
                same = float(sample["filtered_resps"][0]) == record["ll"]
            differ += not same
        acc = None
        if records["output_type"] == "multiple_choice":
            key = records["primary"]
            acc = [sum(r[key] for r in records["items"]) / len(records["items"]),
                   sum(theirs[name][r["doc"]][key] for r in records["items"]) / len(records["items"])]
        report[name] = {"items": len(records["items"]), "differ": differ, "metric": records["primary"],
                        "forgetless_vs_lm_eval": acc}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--items", type=int, default=100)
    parser.add_argument("--docs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default="runs/bench-llm")
    parser.add_argument("--forgetless-side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--samples", help=argparse.SUPPRESS)
    parser.add_argument("--records", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.forgetless_side:
        return forgetless_side(args)

    from forgetless.data.tasks import load_task
    from forgetless.models.loading import resolve_model_path

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = resolve_model_path("smollm2")
    task = load_task("llm-zero-shot", data_dir=args.data_dir, eval_size=args.items, seed=0)
    docs = task.suite.capped(args.docs, 0).sets["wikitext_offline"].items
    groups = {"multiple choice": (MULTIPLE_CHOICE, args.batch_size, {n: task.suite.sets[n].items for n in MULTIPLE_CHOICE}),
              "wikitext": (ROLLING, 1, {"wikitext_offline": docs})}
    runs, checks = [], {}
    for group, (names, batch, samples) in groups.items():
        tag = group.split()[0]
        (out / f"samples-{tag}.json").write_text(json.dumps(samples))
        for repeat in range(args.repeats):
            order = ("lm_eval", "forgetless") if repeat % 2 == 0 else ("forgetless", "lm_eval")
            for tool in order:
                folder = out / f"{tag}-{tool}-{repeat}"
                if tool == "lm_eval":
                    command = lm_eval_command(model, names, out / f"samples-{tag}.json", batch, args.data_dir, folder)
                else:
                    command = [sys.executable, __file__, "--forgetless-side", "--data-dir", args.data_dir, "--model",
                               model, "--samples", str(out / f"samples-{tag}.json"), "--batch-size", str(batch),
                               "--records", str(folder) + ".json"]
                runs.append({"group": group, "tool": tool, "repeat": repeat, **timed(command, Path(str(folder) + ".log"))})
                print(json.dumps(runs[-1]), flush=True)
        checks[group] = same_numbers(json.loads(Path(f"{out}/{tag}-forgetless-0.json").read_text()),
                                     lm_eval_records(out / f"{tag}-lm_eval-0", names))
    write_results(out, args, runs, checks)


def write_results(out: Path, args, runs: list[dict], checks: dict) -> None:
    lines = ["# forgetless vs lm_eval on SmolLM2-135M-Instruct (same YAMLs, items, batch sizes)", "",
             f"`python benchmarks/llm_vs_lm_eval.py --data-dir {args.data_dir} --items {args.items} --docs {args.docs} "
             f"--batch-size {args.batch_size} --repeats {args.repeats}`; {os.cpu_count()} CPUs.", "",
             "| group | run | tool | seconds | load before → after |", "|---|---:|---|---:|---|"]
    for r in runs:
        lines.append(f"| {r['group']} | {r['repeat']} | {r['tool']} | {r['seconds']:.1f} | "
                     f"{r['load_before']:.2f} → {r['load_after']:.2f} |")
    lines += ["", "| group | lm_eval median (s) | forgetless median (s) | forgetless / lm_eval |", "|---|---:|---:|---:|"]
    for group in dict.fromkeys(r["group"] for r in runs):
        med = {tool: statistics.median(r["seconds"] for r in runs if r["group"] == group and r["tool"] == tool)
               for tool in ("lm_eval", "forgetless")}
        lines.append(f"| {group} | {med['lm_eval']:.1f} | {med['forgetless']:.1f} | "
                     f"{med['forgetless'] / med['lm_eval']:.3f} |")
    lines += ["", "Same numbers, item by item (first repeat of each tool):", "",
              "| task | items | items that differ | metric: forgetless / lm_eval |", "|---|---:|---:|---|"]
    for group in checks.values():
        for name, c in group.items():
            acc = c["forgetless_vs_lm_eval"]
            lines.append(f"| {name} | {c['items']} | {c['differ']} | "
                         + (f"{c['metric']} {100 * acc[0]:.1f} / {100 * acc[1]:.1f}" if acc else "log-likelihood") + " |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    (out / "results.json").write_text(json.dumps({"runs": runs, "checks": checks}, indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
