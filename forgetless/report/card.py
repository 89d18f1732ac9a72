"""The report card: what compression cost, in one JSON document and its Markdown rendering.

JSON schema ``forgetless-report-1`` (fractions in [0, 1] for accuracies)::

    schema, task {name, protocol, sizes}, method {name, config, structured, objective, student_init},
    sets {set: {base: metrics, compressed: metrics}}   # metrics: accuracy, n, hard/easy, groups...
    challenge {sets, base, compressed}                  # size-weighted pooled challenge accuracy
    bias {gap_base, gap_compressed, f_bias}             # Du et al. eq. 1
    hard_easy {base: {hard, easy, gap}, compressed: {...}}   # on dev, where ground truth exists
    params {base: {...}, compressed: {...}, ratio}      # total / layers / nonzero / disk bytes
    speed {latency_ms, throughput_per_s, config, threads, device, meaningful}
    robustness {...}                                    # optional (CLEVER)
    notes [..], environment {versions, hardware, created}, seed, command
"""
from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

from ..evaluate.bias import f_bias, relative_gap
from ..fsutil import atomic_write_json, atomic_write_text
from .environment import environment
from .markdown import render_markdown
from .plots import accuracy_plot

SCHEMA = "forgetless-report-1"


def build_card(task, run, method, results: dict, sizes: dict, speed: dict, notes: list[str],
               command: str = "", robustness: dict | None = None) -> dict:
    sets = {name: {"base": results["base"]["sets"][name], "compressed": results["compressed"]["sets"][name]}
            for name in results["base"]["sets"]}
    card = {
        "schema": SCHEMA,
        "task": {"name": task.name, "protocol": task.protocol, "pooled_challenges": task.pooled,
                 "sizes": {"train": len(task.train), **{k: v["base"]["n"] for k, v in sets.items()}}},
        "method": {**method.describe(), "structured": method.structured, "objective": run.objective,
                   "objective_options": run.objective_options, "student_init": run.student_init,
                   "train": asdict(run.train)},
        "sets": sets,
        "challenge": {"sets": task.pooled, "base": results["base"]["challenge_pooled"],
                      "compressed": results["compressed"]["challenge_pooled"]},
        "bias": bias_section(results),
        "hard_easy": {role: _hard_easy(results[role]["sets"]["dev"]) for role in ("base", "compressed")},
        "params": {**sizes, "ratio": sizes["compressed"]["total"] / sizes["base"]["total"],
                   "nonzero_ratio": sizes["compressed"]["nonzero"] / sizes["base"]["nonzero"]},
        "speed": {**speed, "meaningful": bool(method.structured)},
        "notes": list(notes),
        "seed": run.seed,
        "command": command,
        "environment": environment(),
    }
    if robustness:
        card["robustness"] = robustness
    return card


def bias_section(results: dict) -> dict:
    """gap and F_bias from dev accuracy and the pooled challenge accuracy of both models."""
    base_dev = results["base"]["sets"]["dev"]["accuracy"]
    comp_dev = results["compressed"]["sets"]["dev"]["accuracy"]
    base_adv, comp_adv = results["base"]["challenge_pooled"], results["compressed"]["challenge_pooled"]
    if base_adv is None:
        return {"gap_base": None, "gap_compressed": None, "f_bias": None}
    value = f_bias(base_dev, base_adv, comp_dev, comp_adv)
    return {"gap_base": relative_gap(base_dev, base_adv), "gap_compressed": relative_gap(comp_dev, comp_adv),
            "f_bias": None if math.isnan(value) else value}


def _hard_easy(metrics: dict) -> dict | None:
    if "hard" not in metrics:
        return None
    return {"hard": metrics["hard"]["accuracy"], "easy": metrics["easy"]["accuracy"],
            "n_hard": metrics["hard"]["n"], "n_easy": metrics["easy"]["n"], "gap": metrics.get("easy_hard_gap")}


def write_card(card: dict, out_dir: str | Path, extra_plots: list | None = None) -> dict[str, Path]:
    """Write ``report.json``, ``accuracy.png`` and ``report.md`` (which links the plots)."""
    out_dir = Path(out_dir)
    plots = [accuracy_plot(card, out_dir / "accuracy.png")] + [Path(p) for p in (extra_plots or [])]
    card["plots"] = [p.name for p in plots]
    atomic_write_json(out_dir / "report.json", card)
    atomic_write_text(out_dir / "report.md", render_markdown(card))
    return {"json": out_dir / "report.json", "markdown": out_dir / "report.md"}
