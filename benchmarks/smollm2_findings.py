"""What post-training compression makes an offline LLM forget (SmolLM2-135M-Instruct by default,
``--model gemma3-270m`` the second), on what an LLM can do: the zero-shot suite through
lm-evaluation-harness (``--task llm-zero-shot``), base and compressed compared item by item (issue 29).

Each variant is one ``forgetless compress --model M --base as-is … --task llm-zero-shot
--data-dir D --eval-size N --out OUT/<variant>`` (the real pipeline and card); a finished variant is
kept (resumable), and the base's evaluation is computed once and reused by every variant
(``forgetless/llm/cache.py``). The grid (``VARIANTS``): magnitude, Wanda and SparseGPT at 10-60%
unstructured sparsity (a curve), Wanda / SparseGPT 2:4, GPTQ 8 / 4 / 3 bits (groups of 64: 128 does not divide
SmolLM2's width of 576),
ShortGPT removing 3 / 6 / 9 of 30 layers, 25 / 50% of the key/value groups (Michel importance),
int8 and bf16. ``--table`` (also run at the end) renders ``results.md`` from the cards: the numbers
per variant and the published findings checked one by one (``findings``), and ``curve.png``.

    python benchmarks/smollm2_findings.py --data-dir ../shared/data --eval-size 500 --out runs/smollm2-llm
    python benchmarks/smollm2_findings.py --data-dir ../shared/data --variants sparsegpt-50 gptq-4 --out runs/x
    python benchmarks/smollm2_findings.py --model gemma3-270m --variants sparsegpt-50 gptq-4 --out runs/gemma-500
    python benchmarks/smollm2_findings.py --out runs/smollm2-llm --table
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from forgetless.offline_models import OFFLINE_MODELS  # noqa: E402
KNOWLEDGE = ("arc_easy_offline", "arc_challenge_offline", "openbookqa_offline")  # LLM-KICK's knowledge-intensive side
VARIANTS = {f"{method}-{level}": ["--method", method, "--sparsity", str(level / 100)]
            + (["--recovery", "none"] if method == "magnitude" else [])
            for method in ("magnitude", "wanda", "sparsegpt") for level in (10, 20, 30, 40, 50, 60)}
VARIANTS.update({f"{m}-2:4": ["--method", m, "--pattern", "2:4"] for m in ("wanda", "sparsegpt")})
VARIANTS.update({f"gptq-{b}": ["--method", "gptq", "--bits", str(b), "--group-size", "64"] for b in (8, 4, 3)})
VARIANTS.update({f"shortgpt-{k}": ["--method", "block-influence", "--remove", str(k), "--recovery", "none"]
                 for k in (3, 6, 9)})
VARIANTS.update({f"heads-kv-{r}": ["--method", "heads", "--ratio", str(r / 100), "--recovery", "none"] for r in (25, 50)})
VARIANTS["rtn-4"] = ["--method", "rtn", "--bits", "4", "--group-size", "64"]
VARIANTS.update({d: ["--method", "quantize", "--dtype", d] for d in ("int8", "int8-per-tensor", "bf16")})
VARIANTS.update({s: ["--scheme", s] + (["--group-size", "64"] if s.startswith("W4A16") else [])  # issue 39's presets
                 for s in ("W8A8-INT8", "FP8-DYNAMIC", "FP8", "W4A16-AWQ")})
TASK_TEXT = "arc-challenge-dev.jsonl"  # written into --out from the data folder (``task_text``)
CALIBRATION = {"xsum": [],  # llm-zero-shot's default calibration texts: the data folder's XSum sample
               "wikitext2": ["--calibration-data", "wikitext2"],  # its test text: the perplexity it calibrates on
               "arc-dev": ["--calibration-data", TASK_TEXT]}  # the task's own text: a split the suite does not score
VARIANTS.update({f"sparsegpt-50-{c}-seed{s}": ["--method", "sparsegpt", "--sparsity", "0.5", "--seed", str(s),
                                              "--data-seed", "0", *CALIBRATION[c]]  # the same items, other texts
                 for c in CALIBRATION for s in (0, 1, 2)})


def task_text(data_dir: str, out: Path) -> None:
    """Williams & Aletras's "the task's own text": ARC-Challenge's dev split (the suite scores its test split)
    as lm-eval's ARC prompt with the right answer, one JSON line each."""
    rows = [json.loads(line) for line in (Path(data_dir) / "llm/arc/ARC-Challenge-Dev.subset.jsonl").open()]
    texts = [f"Question: {r['question']['stem']}\nAnswer: "
             + next(c["text"] for c in r["question"]["choices"] if c["label"] == r["answerKey"]) for r in rows]
    (out / TASK_TEXT).write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))


def run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if any("arc-dev" in name for name in args.variants):
        task_text(args.data_dir, out)
    for name in args.variants:
        folder = out / name
        if (folder / "report.json").is_file():
            continue
        command = [sys.executable, "-m", "forgetless.cli", "compress", "--model", args.model, "--base", "as-is",
                   "--task", "llm-zero-shot", "--data-dir", args.data_dir, "--eval-size", str(args.eval_size),
                   *(["--perplexity-window", str(args.window)] if args.window else []),
                   *(["--bench-repeats", str(args.repeats)] if args.repeats else ["--speed", "none"]), *args.extra,
                   "--no-progress", "--out", str(folder),
                   *[str(out / a) if a == TASK_TEXT else a for a in VARIANTS[name]]]
        run_variant(name, command, folder)
    table(args)


def run_variant(name: str, command: list[str], folder: Path, **meta) -> None:
    """One variant's ``forgetless compress`` ``command``, logged with its time and load; when it succeeds, the
    command and its cost (with ``meta``) written beside its card as ``variant.json``."""
    start, load = time.time(), os.getloadavg()
    print(f"[{time.strftime('%H:%M:%S')}] {name}: {' '.join(command[3:])}", flush=True)
    code = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(ROOT)}).returncode
    seconds, after = time.time() - start, os.getloadavg()
    print(f"[{time.strftime('%H:%M:%S')}] {name}: exit {code}, {seconds:.0f} s, load before "
          f"{load[0]:.1f} after {after[0]:.1f}", flush=True)
    if code == 0:
        (folder / "variant.json").write_text(json.dumps({"command": command[3:], "seconds": round(seconds),
                                                         "load_before": load[0], "load_after": after[0], **meta}))


def cards(out: Path) -> dict:
    found = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/report.json")}
    return {n: found[n] for n in VARIANTS if n in found}


def pts(entry, signed=True) -> str:
    if not entry or entry.get("value") is None:
        return "–"
    f = "{:+.1f}" if signed else "{:.1f}"
    return f"{f.format(100 * entry['value'])} [{f.format(100 * entry['low'])}, {f.format(100 * entry['high'])}]"


def thirds(card: dict, part: str) -> tuple[int, int, int]:
    """(n, correct→wrong, wrong→correct) in one third, pooled over the headline tasks."""
    llm = card["llm"]
    parts = [llm["tasks"][t]["hard_easy"][part] for t in llm["headline_tasks"]]
    return (sum(p["n"] for p in parts), sum(p["flips"]["correct_to_wrong"] for p in parts),
            sum(p["flips"]["wrong_to_correct"] for p in parts))


def score(card: dict, name: str) -> dict:
    """``{base, compressed, delta}`` of one task in its metric."""
    task = card["llm"]["tasks"][name]
    return task[task["metric"]]


def task_delta(card: dict, names) -> float:
    """The mean change (points) over ``names``."""
    return 100 * sum(score(card, n)["delta"]["value"] for n in names) / len(names)


def ppl_ratio(card: dict) -> float:
    lm = card["language_model"]
    return lm["compressed"]["perplexity"] / lm["base"]["perplexity"]


def table(args) -> None:
    out = Path(args.out)
    runs = cards(out)
    if not runs:
        raise SystemExit(f"{out}: no finished variant")
    first = next(iter(runs.values()))
    mc = [n for n, t in first["llm"]["tasks"].items() if t["output_type"] == "multiple_choice"]
    lines = [f"# {first['provenance']['model']}: what post-training compression forgets (lm-eval zero-shot, n = "
             f"{first['llm']['tasks'][mc[0]]['n']} per task)", "",
             "Base: " + ", ".join(f"{n.replace('_offline', '')} {100 * score(first, n)['base']['value']:.1f}"
                                  + (" (at chance)" if first["llm"]["tasks"][n]["near_chance"] else "") for n in mc)
             + f"; WikiText-2 perplexity {first['language_model']['base']['perplexity']:.2f} (windows of "
             f"{first['language_model']['base']['window']}).", "",
             "| variant | bits / param | sparsity | mean acc Δ pts [95%] | " + " | ".join(n.replace("_offline", "") for n in mc)
             + " | flips c→w / w→c (rate) | KL | hard third c→w / w→c | easy third c→w / w→c | WikiText-2 ppl | "
             "lm-eval word ppl ×|", "|---|---:|---:|---:|" + "---:|" * len(mc) + "---:|---:|---:|---:|---:|---:|"]
    for name, card in runs.items():
        llm, p = card["llm"], card["params"]["compressed"]
        f = (llm.get("pooled") or {}).get("flips") or {}
        cells = [f"{100 * score(card, n)['delta']['value']:+.1f}" for n in mc]
        hard, easy = thirds(card, "hard"), thirds(card, "easy")
        lm = card["language_model"]
        word = next((t["word_perplexity"]["ratio"] for t in llm["tasks"].values() if "word_perplexity" in t), None)
        bits = p.get("bits_per_parameter")
        lines.append(f"| {name} | {'–' if bits is None else f'{bits:.2f}'} | {100 * p['prunable_sparsity']:.0f}% | "
                     f"{pts((llm.get('headline') or {}).get('delta'))} | " + " | ".join(cells) + " | "
                     f"{f.get('correct_to_wrong', '–')} / {f.get('wrong_to_correct', '–')} "
                     f"({100 * (f.get('flip_rate') or 0):.1f}%) | {(llm.get('pooled') or {}).get('kl', {}).get('value', 0):.3f} | "
                     f"{hard[1]} / {hard[2]} of {hard[0]} | {easy[1]} / {easy[2]} of {easy[0]} | "
                     f"{lm['base']['perplexity']:.2f} → {lm['compressed']['perplexity']:.2f} | "
                     + ("–" if word is None else f"{word:.2f}") + " |")
    lines += ["", *findings(runs, mc), "", *head_to_head(out, runs), "## In short", "", *compact(runs), "",
              "![curve.png](curve.png)"]
    curve(runs, out / "curve.png")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def findings(runs: dict, mc: list[str]) -> list[str]:
    """The published findings, each with the numbers that decide it here."""
    lines = ["## The published findings, checked", ""]
    def have(*names):
        return all(n in runs for n in names)
    for method in ("magnitude", "wanda", "sparsegpt"):  # LLM-KICK: perplexity hides the loss; knowledge goes first
        levels = [f"{method}-{s}" for s in (10, 20, 30, 40, 50, 60) if f"{method}-{s}" in runs]
        if levels:
            knowledge = [n for n in KNOWLEDGE if n in mc]
            rest = [n for n in mc if n not in KNOWLEDGE]
            cells = "; ".join(f"{n.split('-')[1]}%: ppl ×{ppl_ratio(runs[n]):.2f}, knowledge {task_delta(runs[n], knowledge):+.1f}, "
                              f"other {task_delta(runs[n], rest):+.1f} pts" for n in levels)
            lines.append(f"- LLM-KICK (perplexity hides the loss; knowledge tasks first), {method}: {cells}.")
    for method in ("wanda", "sparsegpt"):  # LLM-KICK: N:M worse than unstructured at the same sparsity
        if have(f"{method}-50", f"{method}-2:4"):
            a, b = (delta(runs[n]) for n in (f"{method}-50", f"{method}-2:4"))
            lines.append(f"- LLM-KICK (N:M worse), {method} at 50%: unstructured {pts(a)}, 2:4 {pts(b)} points.")
    for quant, pruned in (("gptq-4", "sparsegpt-50"), ("int8", "magnitude-50"), ("int8", "sparsegpt-50"),
                          ("rtn-4", "sparsegpt-50")):  # quantization holds better
        if have(quant, pruned):
            a, b = (delta(runs[n]) for n in (quant, pruned))
            holds = "holds" if a["low"] > b["high"] else ("does not hold" if a["high"] < b["low"] else "intervals overlap")
            lines.append(f"- LLM-KICK / Decoding Compressed Trust (quantization holds better): {quant} {pts(a)} vs "
                         f"{pruned} {pts(b)} points: {holds}; {quant} "
                         + ("≈ base (interval includes 0)." if a["low"] <= 0 <= a["high"] else "differs from the base."))
    lines += kurtic(runs) + int8_scales(runs) + calibration_spread(runs)
    ratios = [(n, r["llm"]["pooled"]["flips"]["flip_rate"], abs(r["llm"]["pooled"]["accuracy"]["delta"]["value"]))
              for n, r in runs.items() if r["llm"].get("pooled")]
    if ratios:
        lines.append("- Dutta et al. (flips ≫ accuracy change): " + "; ".join(
            f"{n} {100 * rate:.1f}% flip vs |Δ| {100 * d:.1f} pts" for n, rate, d in ratios) + ".")
    rmc = [(n, thirds(r, "hard"), thirds(r, "easy")) for n, r in runs.items() if r["llm"].get("headline_tasks")]
    if rmc:
        lines.append("- RMC (loses most on hard examples; thirds by the base's margin, flips c→w + w→c per item): " + "; ".join(
            f"{n} hard {(h[1] + h[2]) / max(1, h[0]):.2f}, easy {(e[1] + e[2]) / max(1, e[0]):.2f}" for n, h, e in rmc) + ".")
    return lines


# the findings that compare two variants: (a, b, the finding); b − a on the same items
PAIRS = (("wanda-50", "wanda-2:4", "LLM-KICK: N:M worse than unstructured"),
         ("sparsegpt-50", "sparsegpt-2:4", "LLM-KICK: N:M worse than unstructured"),
         ("wanda-50", "sparsegpt-50", "SparseGPT's weight update against Wanda's plain mask"),
         ("sparsegpt-50", "gptq-4", "LLM-KICK / Decoding Compressed Trust: quantization holds better than pruning"),
         ("rtn-4", "gptq-4", "GPTQ against round-to-nearest (4-bit, groups of 64)"),
         ("gptq-4", "W4A16-AWQ", "AWQ against GPTQ (4-bit)"),
         ("int8-per-tensor", "int8", "int8 activation scales: per token against per tensor"),
         ("W8A8-INT8", "gptq-4", "Kurtic et al.: W4A16 close to INT8"),
         ("W8A8-INT8", "W4A16-AWQ", "Kurtic et al.: W4A16 close to INT8"),
         ("FP8-DYNAMIC", "W8A8-INT8", "Kurtic et al.: FP8 against INT8"))


def head_to_head(out: Path, runs: dict) -> list[str]:
    """Variants against each other on the same items (``PAIRS``): the headline tasks' mean accuracy of b − a
    with a paired, stratified bootstrap interval (``metrics.paired.macro_intervals``; each card's own interval
    is against the base, so two cards' intervals overlapping says little)."""
    from forgetless.metrics.paired import macro_intervals

    pairs = [(a, b, what) for a, b, what in PAIRS if a in runs and b in runs]
    if not pairs:
        return []
    lines = ["## Variants against each other (paired, the same items)", "",
             "| finding | a | b | b − a points [95%] | decided |", "|---|---|---|---:|---|"]
    correct = {name: _correct(out / name, runs[name]["llm"]["headline_tasks"])  # each variant read once
               for name in {n for a, b, _ in pairs for n in (a, b)}}
    for a, b, what in pairs:
        d = macro_intervals([(correct[a][t], correct[b][t]) for t in runs[a]["llm"]["headline_tasks"]])["delta"]
        decided = "b better" if d["low"] > 0 else "b worse" if d["high"] < 0 else "not distinguishable"
        lines.append(f"| {what} | {a} | {b} | {pts(d)} | {decided} |")
    return lines + [""]


def _correct(folder: Path, tasks: list[str]) -> dict:
    """Per headline task, the compressed model's correctness item by item (ordered by item id)."""
    from forgetless.report.predictions import read_predictions

    rows = read_predictions(folder / "predictions.jsonl")
    return {t: [r["predicted"] == r["gold"] for r in sorted((r for r in rows if r["set"] == t and r["role"] == "compressed"),
                                                            key=lambda r: r["id"])] for t in tasks}


def compact(runs: dict) -> list[str]:
    """The README's table: per variant the headline change, the items that flipped, WikiText-2 perplexity."""
    base = next(iter(runs.values()))["language_model"]["base"]["perplexity"]
    lines = [f"| variant | accuracy Δ points [95%] | items flipped | WikiText-2 perplexity (base {base:.2f}) |",
             "|---|---:|---:|---:|"]
    for name, card in runs.items():
        f = card["llm"]["pooled"]["flips"]
        lines.append(f"| {name} | {pts(delta(card))} | {100 * f['flip_rate']:.1f}% | "
                     f"{card['language_model']['compressed']['perplexity']:.2f} |")
    return lines


def delta(card: dict) -> dict:
    return card["llm"]["headline"]["delta"]


def kurtic(runs: dict) -> list[str]:
    """"Give Me BF16 or Give Me Death" (Kurtic et al. 2025): FP8 lossless, INT8 −1 to −3%, W4A16 close to INT8."""
    cells = [f"{n} {pts(delta(runs[n]))} (ppl ×{ppl_ratio(runs[n]):.2f})"
             for n in ("FP8-DYNAMIC", "FP8", "W8A8-INT8", "int8", "gptq-4", "W4A16-AWQ", "rtn-4") if n in runs]
    if not cells:
        return []
    fp8 = [n for n in ("FP8-DYNAMIC", "FP8") if n in runs]
    lossless = [n for n in fp8 if delta(runs[n])["low"] <= 0 <= delta(runs[n])["high"]]
    verdict = (f"FP8 lossless: {'holds' if len(lossless) == len(fp8) else 'does not hold'} for "
               + ", ".join(fp8) + " (the interval " + ("includes" if lossless else "excludes") + " 0)") if fp8 else ""
    return ["- Kurtic et al. 2025 (FP8 ≈ lossless; INT8 W8A8 −1 to −3%; W4A16 close to INT8): " + "; ".join(cells)
            + (f". {verdict}." if verdict else ".")]


def int8_scales(runs: dict) -> list[str]:
    """What made the 40-item grid's dynamic int8 lose 12.5 points: one activation scale per tensor."""
    if not all(n in runs for n in ("int8", "int8-per-tensor")):
        return []
    a, b = runs["int8-per-tensor"], runs["int8"]
    return [f"- int8, one activation scale per tensor (PyTorch dynamic, `int8-per-tensor`): {pts(delta(a))} points, ppl "
            f"×{ppl_ratio(a):.2f}; per token (`int8`, W8A8 as deployed): {pts(delta(b))} points, ppl ×{ppl_ratio(b):.2f}."]


def calibration_spread(runs: dict) -> list[str]:
    """Williams & Aletras 2024: the same method with three calibration sets × three seeds; the spread of its
    effect beside the effect."""
    names = [n for n in runs if n.startswith("sparsegpt-50-") and "-seed" in n]
    if len(names) < 2:
        return []
    deltas = {n: 100 * delta(runs[n])["value"] for n in names}
    ppls = {n: runs[n]["language_model"]["compressed"]["perplexity"] for n in names}
    source = {n: n[len("sparsegpt-50-"):].rsplit("-seed", 1)[0] for n in names}
    per_set = "; ".join(f"{c}: Δ " + ", ".join(f"{deltas[n]:+.1f}" for n in names if source[n] == c)
                        + " pts, ppl " + ", ".join(f"{ppls[n]:.1f}" for n in names if source[n] == c)
                        for c in sorted(set(source.values())))
    mean = sum(deltas.values()) / len(deltas)
    spread = max(deltas.values()) - min(deltas.values())
    return [f"- Williams & Aletras 2024 (calibration data matters), SparseGPT 50%, {len(names)} runs (calibration set × "
            f"seed) — {per_set}. Effect {mean:+.1f} points on average; spread (max − min) {spread:.1f} points "
            f"= {spread / abs(mean):.0%} of the effect; perplexity {min(ppls.values()):.1f}–{max(ppls.values()):.1f}."]


def curve(runs: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (acc, ppl) = plt.subplots(1, 2, figsize=(11, 4))
    for method in ("magnitude", "wanda", "sparsegpt"):
        names = [n for n in runs if n.startswith(method + "-") and n.split("-")[1].isdigit() and n.count("-") == 1]
        xs = [int(n.split("-")[1]) for n in names]
        heads = [runs[n]["llm"]["headline"]["compressed"] for n in names]
        acc.errorbar(xs, [100 * h["value"] for h in heads], yerr=[[100 * (h["value"] - h["low"]) for h in heads],
                     [100 * (h["high"] - h["value"]) for h in heads]], marker="o", capsize=3, label=method)
        ppl.plot(xs, [runs[n]["language_model"]["compressed"]["perplexity"] for n in names], marker="o", label=method)
    base = next(iter(runs.values()))
    acc.axhline(100 * base["llm"]["headline"]["base"]["value"], color="grey", linestyle="dashed", label="base")
    ppl.axhline(base["language_model"]["base"]["perplexity"], color="grey", linestyle="dashed", label="base")
    acc.set(xlabel="unstructured sparsity (%)", ylabel="mean accuracy of the tasks above chance (%)")
    ppl.set(xlabel="unstructured sparsity (%)", ylabel="WikiText-2 perplexity", yscale="log")
    acc.legend(fontsize=8)
    ppl.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--out", default="runs/smollm2-llm")
    parser.add_argument("--eval-size", type=int, default=500)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--repeats", type=int, default=0, help="speed-benchmark repeats per variant (default 0: --speed none)")
    parser.add_argument("--model", choices=list(OFFLINE_MODELS), default="smollm2", help="the offline LLM compressed")
    parser.add_argument("--window", type=int, help="--perplexity-window (default: the model's context, 2048)")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="further compress options, last")
    parser.add_argument("--table", action="store_true", help="only render results.md and curve.png from the cards")
    args = parser.parse_args()
    table(args) if args.table else run(args)
