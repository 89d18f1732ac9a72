"""The report card: what compression cost, in one JSON document and its Markdown rendering, for
every kind of task and model.

JSON schema ``forgetless-report-2`` (fractions in [0, 1] for accuracies; ROUGE / METEOR in %)::

    schema, kind {task: classification|generation, model: classifier|seq2seq}
    task {name, protocol, metric, pooled_challenges, sizes}
    method {name, config, structured, objective, objective_options, student_init, train}
    headline {metric, base, compressed, kept}           # the task's metric on dev; kept = compressed / base
    sets {set: {base: metrics, compressed: metrics}}    # classification: accuracy, n, hard/easy, groups …
                                                        # generation: rouge1/2/L, meteor, n, distinct share …
    challenge {sets, base, compressed}                  # classification: pooled challenge accuracy, else null
    bias {gap_base, gap_compressed, f_bias}             # Du et al. eq. 1 (classification), else null
    hard_easy {base: {hard, easy, gap}, compressed}     # on dev, where ground truth exists, else null
    params {base: {...}, compressed: {...}, ratio, nonzero_ratio}
    speed {mode: forward|generate, latency_ms, throughput_per_s, config, threads, device, meaningful,
           times_s {latency|throughput: {base: [s], compressed: [s]}},      # raw per-repeat times
           timing {latency|throughput: {base|compressed: {median, q1, q3, iqr, n},
                                        speedup: {speedup, low, high, measurable, n_resamples}}}}
    intervals {method, confidence, n_resamples, seed,   # percentile bootstrap, seeded (report/honest.py)
               sets {set: {role: {accuracy, low, high, n}}},  # n = 0: accuracy / low / high null
               hard_easy {role: {hard, easy}} | null, challenge {role} | null,
               f_bias {f_bias, low, high, base_gap, compressed_gap, base_gap_nonpositive_share,
                       n_dev, n_challenge, n_resamples} | null}   # paired bootstrap, Du et al. eq. 1
    bias.meaningful                                     # false: base gap <= 0 or base near chance
    training {base_epochs, student_init, fine_tunes [{name, epochs}], compressed_extra_epochs,
              compressed_epochs}                        # epochs each model saw (null: teacher given)
    warnings [sentence, ..]                             # report/trust.py checks that fired
    predictions "predictions.jsonl"                     # per-example rows beside the card
    robustness {...}                                    # optional (CLEVER)
    notes [..], run {resolved run configuration}, environment {versions, hardware, created}, seed, command
"""
from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

from ..evaluate.bias import f_bias, relative_gap
from ..fsutil import atomic_write_json, atomic_write_text
from . import honest
from .environment import environment
from .html import render_html
from .markdown import render_markdown
from .plots import accuracy_plot
from .predictions import write_predictions

SCHEMA = "forgetless-report-2"
SECTIONS = ("schema", "kind", "task", "method", "headline", "sets", "challenge", "bias", "hard_easy", "params",
            "speed", "notes", "run", "seed", "command", "environment", "intervals", "warnings")
PREDICTIONS_FILE = "predictions.jsonl"


def build_card(task, run, method, objective, kind, results: dict, sizes: dict, speed: dict, notes: list[str],
               command: str = "", robustness: dict | None = None, predictions: dict | None = None,
               training: dict | None = None) -> dict:
    """The card (schema above). ``predictions`` are the kinds' per-example predictions
    (``{role: {set: {...}}}``): with them the card gets intervals and warnings."""
    sets = {name: {"base": results["base"]["sets"][name], "compressed": results["compressed"]["sets"][name]}
            for name in results["base"]["sets"]}
    labelled = task.kind == "classification"
    metric = "accuracy" if labelled else task.metric
    base_dev, comp_dev = sets["dev"]["base"].get(metric), sets["dev"]["compressed"].get(metric)
    card = {
        "schema": SCHEMA,
        "kind": {"task": task.kind, "model": kind.name},
        "task": {"name": task.name, "protocol": task.protocol, "metric": metric,
                 "pooled_challenges": task.pooled if labelled else [],
                 "sizes": {"train": len(task.train), **{k: v["base"]["n"] for k, v in sets.items()}}},
        "method": {**method.describe(), "structured": method.structured, "objective": objective.name,
                   "objective_options": run.objective_options, "student_init": run.student_init,
                   "train": asdict(run.train)},
        "headline": {"metric": metric, "base": base_dev, "compressed": comp_dev,
                     "kept": comp_dev / base_dev if base_dev else None},
        "sets": sets,
        "challenge": {"sets": task.pooled, "base": results["base"]["challenge_pooled"],
                      "compressed": results["compressed"]["challenge_pooled"]} if labelled else None,
        "bias": bias_section(results) if labelled else None,
        "hard_easy": {role: _hard_easy(results[role]["sets"]["dev"]) for role in ("base", "compressed")}
        if labelled else None,
        "params": {**sizes, "ratio": sizes["compressed"]["total"] / sizes["base"]["total"],
                   "nonzero_ratio": sizes["compressed"]["nonzero"] / sizes["base"]["nonzero"]},
        "speed": {**speed, "meaningful": bool(method.structured),
                  "timing": honest.timing_section(speed, run.seed)},
        "notes": list(notes),
        "run": asdict(run),
        "seed": run.seed,
        "command": command,
        "environment": environment(),
    }
    card["training"] = training
    card["intervals"] = honest.intervals_section(task, predictions, run.seed) if predictions else None
    card["warnings"] = honest.collect(task, results, predictions, card["bias"], training) if predictions else []
    if card["bias"] is not None:
        card["bias"]["meaningful"] = honest.f_bias_meaningful(card["bias"], card["warnings"])
    if robustness:
        card["robustness"] = robustness
    if "zero_shot" in results["base"]:  # causal-lm: the prompt and scoring both models were evaluated with
        card["zero_shot"] = {**results["base"]["zero_shot"], "truncated_prompts": {
            role: results[role]["zero_shot"]["truncated_prompts"] for role in ("base", "compressed")}}
    if "language_model" in results["base"]:  # causal-lm: held-out perplexity of both models
        card["language_model"] = {role: results[role]["language_model"] for role in ("base", "compressed")}
    return card


def validate_card(card: dict) -> None:
    """Raise ``ValueError`` naming the first problem if ``card`` does not follow the schema above."""
    missing = [k for k in SECTIONS if k not in card]
    if missing or card["schema"] != SCHEMA:
        raise ValueError(f"report card: missing sections {missing} or schema {card.get('schema')!r} != {SCHEMA!r}")
    labelled = card["kind"]["task"] == "classification"
    metric = card["task"]["metric"]
    for name, entry in card["sets"].items():
        for role in ("base", "compressed"):
            value = entry[role].get(metric)
            if not isinstance(entry[role].get("n"), int) or (value is not None and not isinstance(value, float)):
                raise ValueError(f"report card: set {name} / {role} lacks n or a numeric {metric}")
    for section in ("challenge", "bias", "hard_easy"):
        if labelled != (card[section] is not None):
            raise ValueError(f"report card: section {section} must be present exactly for classification tasks")
    for part in ("latency_ms", "throughput_per_s"):
        if not all(isinstance(card["speed"][part][k], float) for k in ("base", "compressed", "speedup")):
            raise ValueError(f"report card: speed.{part} must hold base, compressed and speedup")
    if not isinstance(card["warnings"], list) or not all(isinstance(w, str) for w in card["warnings"]):
        raise ValueError("report card: warnings must be a list of sentences")
    intervals = card["intervals"]
    if intervals is not None:
        if not isinstance(intervals.get("n_resamples"), int) or "seed" not in intervals:
            raise ValueError("report card: intervals must record n_resamples and seed")
        for name, entry in intervals["sets"].items():
            for role, interval in entry.items():
                if interval["n"] and not interval["low"] <= interval["accuracy"] <= interval["high"]:
                    raise ValueError(f"report card: interval of {name} / {role} does not contain its accuracy")


def bias_section(results: dict) -> dict:
    """gap and F_bias from dev accuracy and the pooled challenge accuracy of both models."""
    base_dev = results["base"]["sets"]["dev"]["accuracy"]
    comp_dev = results["compressed"]["sets"]["dev"]["accuracy"]
    base_adv, comp_adv = results["base"]["challenge_pooled"], results["compressed"]["challenge_pooled"]
    if base_adv is None:
        return {"gap_base": None, "gap_compressed": None, "f_bias": None}
    if base_dev <= 0 or comp_dev <= 0:  # a relative gap needs a positive dev accuracy
        return {"gap_base": None, "gap_compressed": None, "f_bias": None,
                "undefined": "a model has 0% dev accuracy: the relative gap (eq. 1) is undefined"}
    value = f_bias(base_dev, base_adv, comp_dev, comp_adv)
    return {"gap_base": relative_gap(base_dev, base_adv), "gap_compressed": relative_gap(comp_dev, comp_adv),
            "f_bias": None if math.isnan(value) else value}


def _hard_easy(metrics: dict) -> dict | None:
    if "hard" not in metrics:
        return None
    return {"hard": metrics["hard"]["accuracy"], "easy": metrics["easy"]["accuracy"],
            "n_hard": metrics["hard"]["n"], "n_easy": metrics["easy"]["n"], "gap": metrics.get("easy_hard_gap")}


def write_card(card: dict, out_dir: str | Path, extra_plots: list | None = None,
               prediction_rows: list[dict] | None = None) -> dict[str, Path]:
    """Write ``report.json``, ``metrics.png``, ``report.md`` (which links the plots), ``report.html``
    (one self-contained file, plots embedded), and
    ``predictions.jsonl`` when ``prediction_rows`` are given."""
    out_dir = Path(out_dir)
    if prediction_rows is not None:
        write_predictions(out_dir / PREDICTIONS_FILE, prediction_rows)
        card["predictions"] = PREDICTIONS_FILE
    plots = [accuracy_plot(card, out_dir / "metrics.png")] + [Path(p) for p in (extra_plots or [])]
    card["plots"] = [p.name for p in plots]
    atomic_write_json(out_dir / "report.json", card)
    text = render_markdown(card)
    atomic_write_text(out_dir / "report.md", text)
    title = f"forgetless report card: {card['task']['name']} · {card['method']['name']}"
    atomic_write_text(out_dir / "report.html", render_html(text, out_dir, title))
    return {"json": out_dir / "report.json", "markdown": out_dir / "report.md", "html": out_dir / "report.html"}
