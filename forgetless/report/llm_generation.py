"""The card's generation tasks (lm-eval ``generate_until``): base and compressed compared item by item on
lm-eval's own per-item metric values (``llm/records.generation_records``), with ``metrics/paired.py``.

Per task and metric: both models' means with the paired bootstrap interval of the change (compressed −
base; the same units resampled for both), and for a 0 / 1 metric the flips and the exact McNemar test,
as for multiple choice. A metric with one value per unit of an item (IFEval's instruction-level accuracy)
is compared over its units, as lm-eval aggregates it. Then, per task, the identical answers, the empty
ones (a base that generates nothing: a warning) and up to ``EXAMPLES`` items where the answers part,
earliest first: the prompt, what both say, and each model's answer from the first character where they
differ (the position is the first differing generated token).
"""
from __future__ import annotations

import os

import numpy as np

from ..llm.card import cell, kl_cell, pct_cell
from ..llm.records import GENERATE, unit_values
from ..metrics.paired import flips, paired_intervals
from .card_types import Card
from .headline import delta_text, flip_cells, paired_cells

EXAMPLES = 3  # items where the answers part, per task


def generation_task(name: str, base: dict, comp: dict, seed: int, n_resamples: int) -> dict:
    """A generation task's card entry: per metric the paired change (and flips), the primary metric's as
    ``score`` / ``flips`` (the main table), identical / empty answers, examples and warnings."""
    metrics = {}
    for number, metric in enumerate(base["metrics"]):
        b, c = unit_values(base["items"], metric), unit_values(comp["items"], metric)
        metrics[metric] = {"units": int(b.size), "per_item": b.size == len(base["items"]),
                           **paired_score(b, c, seed + number, n_resamples)}
    primary = metrics[base["primary"]]
    empty = {role: sum(bool(r.get("empty")) for r in records["items"])
             for role, records in (("base", base), ("compressed", comp))}
    n = len(base["items"])
    warnings = [f"lm-eval task {name}: the base's answer to {empty['base']} of {n} items is empty "
                "(it ends at once: an end-of-sequence token or a stop string first); those items compare "
                "nothing the base said"] if empty["base"] else []
    return {"score": primary["score"], "flips": primary["flips"], "in_headline": False, "metrics": metrics,
            "identical_answers": sum(b["response"] == c["response"] for b, c in zip(base["items"], comp["items"])),
            "empty_answers": empty, "examples": parting_examples(base["items"], comp["items"]), "warnings": warnings}


def paired_score(base, compressed, seed: int, n_resamples: int) -> dict:
    """``{"score", "flips"}``: the paired interval of compressed − base over the items' values, and for a 0 / 1
    metric the flips with the exact McNemar test (None for another metric)."""
    binary = bool(np.isin(base, (0, 1)).all() and np.isin(compressed, (0, 1)).all())
    return {"score": paired_intervals(base, compressed, n_resamples, seed),
            "flips": flips(base, compressed) if binary else None}


def parting_examples(base_items: list[dict], comp_items: list[dict]) -> list[dict]:
    """Up to ``EXAMPLES`` items whose answers differ, the earliest parting first: ``{doc, prompt, position,
    shared, base, compressed}`` (position: the first differing generated token, None where the tokens were
    not kept: lm-eval's own generation under ``--exact-lm-eval``; texts from the first differing character)."""
    parted = []
    for b, c in zip(base_items, comp_items):
        if b["response"] == c["response"]:
            continue
        tokens = list(zip(b.get("tokens") or [], c.get("tokens") or []))
        position = next((i for i, (x, y) in enumerate(tokens) if x != y), len(tokens)) if tokens else None
        common = len(os.path.commonprefix([b["response"], c["response"]]))
        parted.append({"doc": b["doc"], "prompt": b["prompt"], "position": position,
                       "shared": b["response"][:common], "base": b["response"][common:],
                       "compressed": c["response"][common:]})
    return sorted(parted, key=lambda e: (e["position"] if e["position"] is not None else len(e["shared"]),
                                         e["doc"]))[:EXAMPLES]


def _position(example: dict) -> str:
    return "–" if example["position"] is None else str(example["position"])


def generation_lines(entries: dict) -> list[str]:
    """The card's "what it says" lines of the generation tasks among an LLM suite's task ``entries``: every
    metric with its interval, flips and McNemar, and where the answers part (escaped: a model's words stay
    text on every page)."""
    tasks = {n: t for n, t in entries.items() if t["output_type"] == GENERATE}
    if not tasks:
        return []
    lines = ["", "### What it says: generation tasks, answer by answer", "",
             "Both models answer every item greedily (lm-eval's prompt, `until` and `max_gen_toks`); lm-eval scores "
             "each answer with the task's own metrics. Δ: compressed − base with its paired 95% bootstrap interval "
             "(the same items resampled for both; a metric with one value per instruction over its instructions, as "
             "lm-eval aggregates it); flips and the exact McNemar test for 0 / 1 metrics.", "",
             "| task | metric | units | base | compressed | Δ | correct→wrong | wrong→correct | McNemar p |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, t in tasks.items():
        for metric, m in t["metrics"].items():
            units = f"{m['units']}" + ("" if m["per_item"] else f" (of {t['n']} items)")
            lines.append(f"| {cell(name)} | {cell(metric)} | {units} | {paired_cells(m['score'])} | "
                         f"{flip_cells(m.get('flips') or {})} |")
    lines += [""] + [f"{cell(name)}: identical answers {t['identical_answers']} of {t['n']}; empty answers base "
                     f"{t['empty_answers']['base']}, compressed {t['empty_answers']['compressed']}."
                     for name, t in tasks.items()]
    examples = [(name, e) for name, t in tasks.items() for e in t.get("examples") or []]
    if examples:
        lines += ["", "Where the answers part (each answer from the first character where they differ; position: the "
                      "first differing generated token):", "",
                  "| task | item | prompt | position | both say | base goes on | compressed goes on |",
                  "|---|---:|---|---:|---|---|---|"]
        lines += [f"| {cell(name)} | {e['doc']} | {cell(e['prompt'])} | {_position(e)} | {cell(e['shared'])} | "
                  f"{cell(e['base'])} | {cell(e['compressed'])} |" for name, e in examples]
    return lines


def generation_compare(cards: dict[str, Card], sets: list[str]) -> list[str]:
    """``compare``'s side-by-side tables: per run the change of every metric of the common generation tasks
    (paired interval) with the identical answers, and the divergence along the base's own answers."""
    first = next(iter(cards.values())).llm.tasks
    columns = [(t, m) for t in sets if first.get(t, {}).get("output_type") == GENERATE for m in first[t]["metrics"]]
    lines = []
    if columns:
        tasks = list(dict.fromkeys(t for t, _ in columns))
        lines += ["", "## What it says: generation tasks, change vs the run's base (points, [95% paired interval])", "",
                  "| run | " + " | ".join(f"{cell(t)} {cell(m)}" for t, m in columns) + " | identical answers |",
                  "|:---|" + "---:|" * (len(columns) + 1)]
        for name, card in cards.items():
            entries = card.llm.tasks
            cells = [delta_text(entries[t]["metrics"][m]["score"]["delta"]) if m in entries[t].get("metrics", {})
                     else "–" for t, m in columns]
            same = ", ".join(f"{entries[t]['identical_answers']}/{entries[t]['n']}" for t in tasks)
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {same} |")
    diverged = {name: card.llm.divergence for name, card in cards.items()}
    if any(diverged.values()):
        lines += ["", "## What it says: along the base's own answers (--divergence-prompts)", "",
                  "| run | prompts | KL(base‖compressed) per token | top-1 agreement | identical answers | "
                  "median first divergence | KL, high-entropy third |", "|:---|---:|---:|---:|---:|---:|---:|"]
        for name, d in diverged.items():
            if not d:
                lines.append(f"| {name} | – | – | – | – | – | – |")
                continue
            median = d["first_divergence"]["median"]
            lines.append(f"| {name} | {d['prompt_set']['n']} | {kl_cell(d['kl'])} | {pct_cell(d['top1_agreement'])} | "
                         f"{pct_cell(d['identical'])} | {'–' if median is None else f'{median:g}'} | "
                         f"{kl_cell(d['entropy_thirds']['high']['kl'])} |")
    return lines
