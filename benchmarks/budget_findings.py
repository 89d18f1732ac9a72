"""Issue 52's findings: does a bit budget's mix beat the uniform format of the same or larger size on SmolLM2?

Each budget is one ``forgetless compress --model smollm2 --base as-is --method gptq --bits-budget B
--budget-formats W4A16-g192,W4A16-g64,W8A16,kept --sensitivity linear-types --task llm-zero-shot --eval-size N
--perplexity-windows 10 --speed none --threads 1``
(the real pipeline and card): the run quantizes twice (the mix, then the uniform check's single format) and
evaluates both on the same items, the base's evaluation coming from the cache (``forgetless/llm/cache.py``),
as does a uniform model another budget already evaluated (the same format gives bit-identical weights). The
formats include groups of 192 because SmolLM2's units cannot store less than ~4.44 bits with the default ones
(groups of 128 do not divide its 576-wide attention inputs), so 4.25 would be out of range.

A budget whose card exists is skipped (resumable); each run's command, wall time and the 1-minute load before,
after and at its highest (sampled every 10 s) go to ``variant.json`` beside the card. ``--table`` (also run at
the end) prints the findings table from the cards: per budget the mix, the bits reached and bytes, the uniform
format and its bits and bytes, mixed − base on the card's headline tasks, and the uniform check: its tasks (the
run's headline tasks, the base's above chance; before 2026-11-29 10:00 those where the uniform model was), the accuracy of both pooled over their items,
mixed − uniform with its paired 95% bootstrap interval, the items only one of them answers right (exact McNemar
p), the KL between their choice distributions and the verdict.

    python benchmarks/budget_findings.py --data-dir ../shared/data --budgets 4.5 5 4.25 6 --out runs/budget
    python benchmarks/budget_findings.py --out runs/budget --table
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORMATS = "W4A16-g192,W4A16-g64,W8A16,kept"


def command(args, budget: str, folder: Path) -> list[str]:
    return [sys.executable, "-m", "forgetless.cli", "compress", "--model", "smollm2", "--base", "as-is",
            "--method", "gptq", "--bits-budget", budget, "--budget-formats", FORMATS, "--sensitivity", "linear-types",
            "--task", "llm-zero-shot", "--data-dir", args.data_dir, "--eval-size", str(args.eval_size),
            "--perplexity-windows", str(args.windows), "--speed", "none", "--threads", str(args.threads), "--no-progress", *args.extra, "--out", str(folder)]


def highest_load(stop: threading.Event, seen: list) -> None:
    while not stop.wait(10):
        seen.append(os.getloadavg()[0])


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for budget in args.budgets:
        folder = out / f"budget-{budget}"
        if (folder / "report.json").is_file():
            continue
        line = command(args, budget, folder)
        start, before, seen, stop = time.time(), os.getloadavg()[0], [], threading.Event()
        sampler = threading.Thread(target=highest_load, args=(stop, seen), daemon=True)
        sampler.start()
        print(f"[{time.strftime('%H:%M:%S')}] budget {budget}: {' '.join(line[3:])}", flush=True)
        code = subprocess.run(line, env={**os.environ, "PYTHONPATH": str(ROOT)}).returncode
        stop.set()
        seconds, after = time.time() - start, os.getloadavg()[0]
        print(f"[{time.strftime('%H:%M:%S')}] budget {budget}: exit {code}, {seconds:.0f} s, load {before:.1f} "
              f"→ {after:.1f} (highest {max(seen, default=after):.1f})", flush=True)
        if code == 0:
            (folder / "variant.json").write_text(json.dumps({
                "command": line[3:], "seconds": round(seconds), "load_before": before, "load_after": after,
                "load_highest": max(seen, default=after)}))
    print(table(out))


def pts(entry: dict | None, signed: bool = False) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    f = "{:+.1f}" if signed else "{:.1f}"
    return f"{f.format(100 * entry['value'])} [{f.format(100 * entry['low'])}, {f.format(100 * entry['high'])}]"


def flip_text(flips: dict) -> str:
    """Items the mix answers right and the uniform wrong, and the reverse, of n (exact McNemar p)."""
    if not flips:
        return "–"
    return (f"{flips['wrong_to_correct']} / {flips['correct_to_wrong']} of {flips['n']} "
            f"(p {flips['mcnemar_p']:.2g})")


def mix(section: dict) -> str:
    counts: dict[str, int] = {}
    for row in section["assignment"]:
        counts[row["format"]] = counts.get(row["format"], 0) + 1
    return ", ".join(f"{n} {name}" for name, n in counts.items())


def table(out: Path) -> str:
    """The findings table (module docstring) from the cards under ``out``: mixed − base on the card's headline
    tasks (the base's above chance), mixed − uniform on the uniform check's (the uniform's above chance)."""
    lines = ["| budget | mix (7 linear kinds) | bits reached | bytes | uniform: bits, bytes | mixed − base, points "
             "[95%] | check's tasks | mixed, uniform accuracy | mixed − uniform, points [95%] | "
             "mix right / wrong (McNemar p) | KL uniform‖mixed | verdict | run |",
             "|---:|---|---:|---:|---|---:|---|---:|---:|---:|---:|---|---:|"]
    for card_path in sorted(out.glob("budget-*/report.json"), key=lambda p: float(p.parent.name.split("-")[1])):
        card = json.loads(card_path.read_text())
        section = card["method"]["sections"]["budget"]
        check = section.get("uniform_check") or {}
        head = (card.get("llm") or {}).get("headline") or {}
        accuracy = check.get("accuracy") or {}
        run_file = card_path.parent / "variant.json"
        spent = json.loads(run_file.read_text()) if run_file.is_file() else {}
        cost = (f"{spent['seconds'] / 60:.0f} min, load {spent['load_before']:.1f}–{spent['load_highest']:.1f}"
                if spent else "–")
        tasks = ", ".join(t.replace("_offline", "") for t in check.get("tasks") or [])
        kl = check.get("kl") or {}
        lines.append(
            f"| {section['bits_budget']:g} | {mix(section)} | {section['bits_per_weight']:.3f} | {section['bytes']:,} | "
            f"{check.get('format', '–')}: {check.get('bits_per_weight', 0):.3f}, {check.get('bytes', 0):,} | "
            f"{pts(head.get('delta'), signed=True)} | {tasks or '–'} | "
            f"{pts(accuracy.get('compressed'))}, {pts(accuracy.get('base'))} | {pts(check.get('difference'), signed=True)} | "
            f"{flip_text(check.get('flips') or {})} | {kl.get('value', 0):.3f} | **{check.get('verdict', '–')}** | {cost} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--out", default="runs/budget")
    parser.add_argument("--budgets", nargs="+", default=["4.5", "5", "4.25", "6"])
    parser.add_argument("--eval-size", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--windows", type=int, default=10, help="--perplexity-windows (10 of 2,048 tokens)")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="further compress options, last")
    parser.add_argument("--table", action="store_true", help="only print the table from the cards")
    args = parser.parse_args()
    if args.table:
        print(table(Path(args.out)))
    else:
        run(args)


if __name__ == "__main__":
    main()
