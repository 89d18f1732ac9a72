"""What compression changes in what an offline LLM *says* (SmolLM2-135M-Instruct by default), not only in
what it scores (issue 56, item 4): the variants of the zero-shot grid (``smollm2_findings.py``'s
``VARIANTS``, one home) compared with their base on

* the **divergence along the base's own answers** (``--divergence-prompts``): the base answers P of the data
  folder's IFEval prompts greedily once (cached), each compressed model is run teacher-forced on prompt +
  answer in one forward: identical answers, first divergence, KL(base ‖ compressed) per answer token overall
  and by thirds of the base's token entropy, top-1 agreement;
* **instruction following**: IFEval (``ifeval_offline``, lm-eval's checkers) on N prompts, both models
  generating; prompt- and instruction-level strict accuracy, paired.

Each variant is one ``forgetless compress --model M --base as-is … --task lm-eval --lm-eval-tasks
ifeval_offline --eval-size N --divergence-prompts P --perplexity-windows 0 --data-dir D --speed none --threads
1 --out OUT/<variant>`` (the real pipeline and card); a finished variant is kept (resumable); the base's
answers and its IFEval evaluation are computed by the first variant and reused by every other (the shared
cache, ``forgetless/llm/cache.py``: keep ``--threads`` and the batch size the same). ``--ifeval-size 0``
for a variant: the divergence only (IFEval on one prompt, not reported). ``--table`` (also run at the end)
renders ``OUT/results.md`` from the cards.

    python benchmarks/smollm2_generation_findings.py --data-dir ../shared/data --out runs/gen-findings
    python benchmarks/smollm2_generation_findings.py --variants W8A8-INT8 wanda-50 --out runs/gen-findings
    python benchmarks/smollm2_generation_findings.py --out runs/gen-findings --table
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from forgetless.offline_models import OFFLINE_MODELS  # noqa: E402
from smollm2_findings import VARIANTS, pts, run_variant  # noqa: E402  (the zero-shot grid's: one home)

DEFAULT_VARIANTS = ("W8A8-INT8", "FP8-DYNAMIC", "gptq-4", "wanda-50", "sparsegpt-50", "W4A16-AWQ", "wanda-2:4",
                    "sparsegpt-2:4")
TASK = "ifeval_offline"
METRICS = ("prompt_level_strict_acc", "inst_level_strict_acc")


def command(args, name: str, folder: Path) -> list[str]:
    """The ``forgetless compress`` command of one variant."""
    return [sys.executable, "-m", "forgetless.cli", "compress", "--model", args.model, "--base", "as-is",
            "--task", "lm-eval", "--lm-eval-tasks", TASK, "--eval-size", str(args.ifeval_size or 1),
            "--divergence-prompts", str(args.prompts), "--perplexity-windows", "0", "--data-dir", args.data_dir,
            "--speed", "none", "--threads", "1", *args.extra, "--no-progress", "--out", str(folder), *VARIANTS[name]]


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.variants:
        folder = out / name
        if (folder / "report.json").is_file():
            continue
        run_variant(name, command(args, name, folder), folder, ifeval_reported=bool(args.ifeval_size))
    table(args)


def cards(out: Path) -> dict:
    """``{variant: (card, variant.json)}`` of the finished variants, in the grid's order."""
    found = {}
    for path in out.glob("*/report.json"):
        meta = path.parent / "variant.json"
        found[path.parent.name] = (json.loads(path.read_text()), json.loads(meta.read_text()) if meta.is_file() else {})
    return {n: found[n] for n in VARIANTS if n in found}


def pct(entry) -> str:
    return pts(entry, signed=False) + "%" if entry and entry.get("value") is not None else "–"


def kl(entry) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    return f"{entry['value']:.4f} [{entry['low']:.4f}, {entry['high']:.4f}]"


def high_share(d: dict) -> float:
    """The share of all the KL (summed over answer tokens) that falls in the high-entropy third."""
    thirds = d["entropy_thirds"]
    sums = {t: (thirds[t]["kl"]["value"] or 0) * thirds[t]["kl"]["tokens"] for t in ("low", "middle", "high")}
    return sums["high"] / max(sum(sums.values()), 1e-12)


def divergence_table(runs: dict) -> list[str]:
    lines = ["| variant | identical answers | first divergence (median token) | identical first 16 tokens | "
             "top-1 agreement | KL nats/token | KL low / middle / high entropy third | high third's share of the KL |",
             "|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, (card, _) in runs.items():
        d = card["llm"]["divergence"]
        n, first, thirds = d["prompts"], d["first_divergence"], d["entropy_thirds"]
        median = "–" if first["median"] is None else f"{first['median']:g}"
        lines.append(f"| {name} | {round(d['identical']['value'] * n)} of {n}: {pct(d['identical'])} | {median} | "
                     f"{d['identical_first'].get('16', '–')} of {n} | {pct(d['top1_agreement'])} | {kl(d['kl'])} | "
                     + " / ".join(kl(thirds[t]["kl"]) for t in ("low", "middle", "high"))
                     + f" | {100 * high_share(d):.0f}% |")
    return lines


def ifeval_table(runs: dict) -> list[str]:
    lines = ["| variant | prompt-strict base → compressed | Δ pts [95%] | flips c→w / w→c (McNemar p) | "
             "instruction-strict Δ pts [95%] | identical answers |", "|---|---:|---:|---:|---:|---:|"]
    for name, (card, meta) in runs.items():
        if not meta.get("ifeval_reported", True):
            continue
        task = card["llm"]["tasks"][TASK]
        prompt, inst = (task["metrics"][m] for m in METRICS)
        s, f = prompt["score"], prompt["flips"]
        lines.append(f"| {name} | {100 * s['base']['value']:.1f} → {100 * s['compressed']['value']:.1f} | "
                     f"{pts(s['delta'])} | {f['correct_to_wrong']} / {f['wrong_to_correct']} (p {f['mcnemar_p']:.3g}) "
                     f"| {pts(inst['score']['delta'])} | {task['identical_answers']} of {task['n']} |")
    return lines


def costs(runs: dict) -> list[str]:
    lines = ["| variant | seconds | load before / after | peak memory (MiB) |", "|---|---:|---:|---:|"]
    for name, (card, meta) in runs.items():
        peak = ((card.get("environment") or {}).get("run_memory") or {}).get("peak_rss_mib", "–")
        lines.append(f"| {name} | {meta.get('seconds', '–')} | {meta.get('load_before', 0):.1f} / "
                     f"{meta.get('load_after', 0):.1f} | {peak} |")
    return lines


def table(args) -> None:
    out = Path(args.out)
    runs = cards(out)
    if not runs:
        raise SystemExit(f"{out}: no finished variant")
    card = next(iter(runs.values()))[0]
    d = card["llm"]["divergence"]
    ifeval = [n for n, (_, meta) in runs.items() if meta.get("ifeval_reported", True)]
    n_items = card["llm"]["tasks"][TASK]["n"] if ifeval else 0
    lines = [f"# {card['provenance']['model']}: what compression changes in what it says", "",
             f"Divergence along the base's greedy answers to {d['prompts']} of the {d['prompt_set']['size']} IFEval "
             f"prompts (at most {d['prompt_set']['max_new_tokens']} new tokens, "
             f"{'chat template' if d['prompt_set']['chat_template'] else 'no chat template'}, {d['answer_tokens']:,} "
             "answer tokens); intervals: 95% bootstrap over prompts.", "", *divergence_table(runs), ""]
    if ifeval:
        lines += [f"IFEval (`{TASK}`, lm-eval's checkers, {n_items} prompts, both models generate, at most 128 new "
                  "tokens); Δ = compressed − base, paired 95% interval.", "", *ifeval_table(runs), ""]
    lines += ["Cost per variant (compression + both evaluations; the base's from the cache after the first):", "",
              *costs(runs)]
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--out", default="runs/gen-findings")
    parser.add_argument("--prompts", type=int, default=200, help="prompts the base answers (the divergence)")
    parser.add_argument("--ifeval-size", type=int, default=200, help="IFEval prompts both models answer (0: none)")
    parser.add_argument("--variants", nargs="+", default=list(DEFAULT_VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--model", choices=list(OFFLINE_MODELS), default="smollm2", help="the offline LLM compressed")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="further compress options, last")
    parser.add_argument("--table", action="store_true", help="only render results.md from the cards")
    args = parser.parse_args()
    table(args) if args.table else run(args)
