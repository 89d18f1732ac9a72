"""What ``print(compared)`` shows for ``compared = forgetless.evaluate(model, data, base=...)``: the comparison in
a few lines a person reads (issue 54: the README's quickstart printed a dict of 6,000 characters) — the headline
change with its paired 95% interval, one row a task (LLM suites) or a set (classification) with both models, the
paired change and the flips, the perplexity of both, how many warnings there are — and where the rest is
(``compared.to_dict()``). Every number is one of the comparison's own; nothing is computed here."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .headline import delta_text, num, pct

if TYPE_CHECKING:  # types only: card_types' Comparison.summary imports this module
    from .card_types import Comparison, LlmSuite


def comparison_text(comparison: Comparison) -> str:
    """The few lines of ``Comparison.summary()``."""
    llm = comparison.llm
    rows = _task_rows(llm) if llm else _set_rows(comparison)
    lines = [_headline(comparison), "", *_table(["", "metric", "base", "compressed", "change [95%]", "flips"], rows)]
    perplexity = comparison.language_model
    if perplexity is not None and perplexity.base.get("perplexity") is not None:
        base, compressed = perplexity.base, perplexity.compressed or {}
        lines.append(f"WikiText-2 perplexity ({base.get('windows')} windows of {base.get('window')} tokens): "
                     f"{base['perplexity']:.2f} → {compressed.get('perplexity', float('nan')):.2f}")
    warnings = comparison.warnings
    if warnings:
        lines.append(f"{len(warnings)} warning{'s' if len(warnings) > 1 else ''}, read them first: compared.warnings")
    lines.append("Everything else (intervals of both models, hard / easy, KL, calibration): compared.to_dict()")
    return "\n".join(lines)


def _headline(comparison: Comparison) -> str:
    llm = comparison.llm
    if llm:
        tasks = llm.headline_tasks
        delta = (llm.headline or {}).get("delta")
        if all(t.get("output_type") not in (None, "multiple_choice") for t in llm.tasks.values()):
            return "No headline: the suite has no multiple-choice task (each task's change is below)."
        if not tasks or not delta:
            return "No headline: no task is above chance for the base (the warnings say which)."
        return (f"Mean accuracy of the {len(tasks)} task{'s' if len(tasks) > 1 else ''} above chance, compressed − "
                f"base: {delta_text(delta)} points")
    metric = comparison.task.metric
    delta = (_paired(comparison).get("sets") or {}).get("dev")
    return f"Dev {metric}, compressed − base: {delta_text(delta)} points"


def _paired(comparison: Comparison) -> dict:
    """The paired intervals of the changes (``intervals.delta``; empty without intervals)."""
    return (comparison.intervals.delta if comparison.intervals else None) or {}


def _task_rows(llm: LlmSuite) -> list[list[str]]:
    rows = []
    for name, task in llm.tasks.items():
        if "word_perplexity" in task:  # a rolling task (lm-eval's wikitext): perplexities, lower is better
            w = task["word_perplexity"]
            rows.append([name, "word_perplexity", num(w["base"]), num(w["compressed"]), num(w["ratio"]) + "×", "–"])
            continue
        generation = task.get("output_type") == "generate_until"  # its first metric's paired change: "score"
        scores = task.get("score" if generation else task["metric"]) or {}
        rows.append([name + ("" if generation or task.get("in_headline", True) else " (at chance)"), task["metric"],
                     pct((scores.get("base") or {}).get("value")), pct((scores.get("compressed") or {}).get("value")),
                     delta_text(scores.get("delta")), _flips(task.get("flips"))])
    return rows


def _set_rows(comparison: Comparison) -> list[list[str]]:
    metric = comparison.task.metric
    deltas = _paired(comparison).get("sets") or {}
    return [[name, metric, pct(entry.base.get(metric)), pct(entry.compressed.get(metric)),
             delta_text(deltas.get(name)), "–"] for name, entry in comparison.sets.items()]


def _flips(flips: dict | None) -> str:
    if not flips:
        return "–"
    return f"{flips['correct_to_wrong']} c→w, {flips['wrong_to_correct']} w→c"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
