"""Sweep tables: per-run report cards → mean ± std over seeds per (objective, level) row, the
Markdown table (Du et al. Table 7 layout: dev, challenge, F_bias, hard, easy; for generation
tasks the dev column holds the task's metric), plots and ``sweep.json``."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..data.task import Task
from ..fsutil import atomic_write_json, atomic_write_text
from ..report.card_types import Card, Challenge
from ..report.headline import headline_numbers, speedup_text
from ..report.html import render_html
from ..report.pareto import pareto_plot
from ..report.rmc_plots import level_name, sweep_plots

SCHEMA = "forgetless-sweep-2"
METRICS = ("dev", "challenge", "f_bias", "hard", "easy", "size", "speedup")


def card_metrics(card: Card) -> dict:
    """The Table-7 numbers of one report card (fractions; the task's metric on dev for generation),
    for base and compressed models, plus per-group accuracies by gold label on challenge sets (e.g.
    HANS non-entailment per heuristic)."""
    out = {}
    metric = card.task.metric
    challenge = card.challenge or Challenge(sets=[], base=None, compressed=None)
    for role in ("base", "compressed"):
        hard_easy = (getattr(card.hard_easy, role) if card.hard_easy else None) or {}
        groups = {}
        for set_name in challenge.sets:
            for group, entry in (getattr(card.sets[set_name], role).get("groups") or {}).items():
                for key, value in entry.items():
                    if key not in ("n", "accuracy"):  # accuracy per gold label within the group
                        groups[f"{set_name}/{group}/{key}"] = value
        # an LLM suite has no dev set: its headline is the mean accuracy of its tasks above chance
        dev = getattr(card.headline, role) if card.llm else getattr(card.sets["dev"], role).get(metric)
        if dev is not None and metric != "accuracy":
            dev = dev / 100.0  # ROUGE / METEOR are in %; tables show every metric as % of a fraction
        out[role] = {"dev": dev, "challenge": getattr(challenge, role),
                     "hard": hard_easy.get("hard"), "easy": hard_easy.get("easy"), "groups": groups}
    out["base"].update(f_bias=1.0, size=1.0, speedup=1.0)
    out["compressed"].update(f_bias=card.bias.f_bias if card.bias else None, size=card.params.ratio,
                             speedup=(card.speed.throughput_per_s or {}).get("speedup"))  # None: not timed
    return out


def _record(card: Card, level_option: str = "sparsity", seconds: float | None = None) -> dict:
    """One run's row: objective, level (the value of the swept method option), seed, the run's ``seconds``,
    metrics, the card's warnings, whether its F_bias is meaningful, and its headline numbers with intervals
    (``report/headline.py``: the Pareto plot's points)."""
    return {"objective": card.method.objective, "level": card.method.config.get(level_option),
            "seed": card.seed, "seconds": seconds, "notes": list(card.notes), "warnings": list(card.warnings),
            "f_bias_meaningful": bool(card.bias and card.bias.meaningful),
            "headline": headline_numbers(card), **card_metrics(card)}


def _summary(records: list[dict], task: dict | Task, setup: dict, difficulty: dict, started: float | None) -> dict:
    summary = aggregate(records)
    if isinstance(task, Task):
        task = {"name": task.name, "protocol": task.protocol, "train": len(task.train),
                "sets": {name: len(s) for name, s in task.eval_sets().items()}}
    summary.update({"task": task, "setup": setup, "difficulty": difficulty, "runs": records,
                    "seconds": time.time() - started if started else None})
    return summary


def _mean_std(values: list) -> dict:
    vals = [v for v in values if v is not None]
    if not vals:
        return {"mean": None, "std": None, "n": 0}
    arr = np.asarray(vals, dtype=float)
    return {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else 0.0, "n": len(arr)}


def aggregate(records: list[dict]) -> dict:
    """Mean ± sample std (ddof 1; 0 for one seed) over seeds of every metric, per
    (objective, level); the uncompressed base model (the teacher) as its own row. A row's F_bias is
    ``f_bias_meaningful`` only when every run's is (no warning against it)."""
    rows, keys = [], []
    for r in records:
        if (r["objective"], r["level"]) not in keys:
            keys.append((r["objective"], r["level"]))
    base_by_seed = {r["seed"]: r["base"] for r in records}
    group_names = sorted({g for r in records for g in r["compressed"]["groups"]})
    base = {m: _mean_std([b.get(m) for b in base_by_seed.values()]) for m in METRICS}
    base["groups"] = {g: _mean_std([b["groups"].get(g) for b in base_by_seed.values()]) for g in group_names}
    for objective, level in keys:
        runs = [r for r in records if (r["objective"], r["level"]) == (objective, level)]
        row = {"objective": objective, "level": level, "seeds": [r["seed"] for r in runs],
               "f_bias_meaningful": all(r.get("f_bias_meaningful", True) for r in runs),
               "warnings": sum(len(r.get("warnings") or []) for r in runs)}
        row.update({m: _mean_std([r["compressed"].get(m) for r in runs]) for m in METRICS})
        row["groups"] = {g: _mean_std([r["compressed"]["groups"].get(g) for r in runs]) for g in group_names}
        rows.append(row)
    return {"schema": SCHEMA, "base": base, "rows": rows}


def _fmt(entry: dict, percent: bool = True) -> str:
    if entry["mean"] is None:
        return "–"
    scale = 100 if percent else 1
    digits = 1 if percent else 2
    text = f"{entry['mean'] * scale:.{digits}f}"
    return text + (f" ± {entry['std'] * scale:.{digits}f}" if entry["n"] > 1 else "")


def render_markdown(summary: dict) -> str:
    """Table-7-style table (accuracies in %, mean ± std over seeds) plus difficulty agreement."""
    lines = [f"# Sweep: {summary['task']['name']}", "", summary["task"]["protocol"], ""]
    setup = summary["setup"]
    level = level_name(summary)
    lines += [f"method {setup['method']} {setup['method_options'] or ''} ({level} per row); student init {setup['student_init']}; "
              f"seeds {setup['seeds']}; training {setup['train']['epochs']:g} epochs "
              f"(teacher {setup['teacher_train']['epochs']:g}"
              + (f"; one teacher (seed {setup['teacher_seed']}) shared by every seed" if setup.get("teacher_seed") is not None
                 else "") + f"); train set {summary['task']['train']} examples; "
              f"eval sets {summary['task']['sets']}", ""]
    lines += [f"| objective | {level} | size | speedup | dev | challenge | F_bias | hard | easy | seeds | warnings |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    b = summary["base"]
    lines.append(f"| base (teacher) | – | 1 | 1 | {_fmt(b['dev'])} | {_fmt(b['challenge'])} | 1 | {_fmt(b['hard'])} | "
                 f"{_fmt(b['easy'])} | {b['dev']['n']} | |")
    for row in summary["rows"]:
        f_bias = _fmt(row["f_bias"], percent=False)
        if row["f_bias"]["mean"] is not None and not row.get("f_bias_meaningful", True):
            f_bias += " (not meaningful)"
        lines.append(f"| {row['objective']} | {row['level']:g} | {_fmt(row['size'], percent=False)}× | "
                     f"{_speedup(row, summary.get('runs') or [])} | {_fmt(row['dev'])} | {_fmt(row['challenge'])} | "
                     f"{f_bias} | {_fmt(row['hard'])} | {_fmt(row['easy'])} | {len(row['seeds'])} | "
                     f"{row.get('warnings', 0)} |")
    lines += ["", "size: parameters / the base's; speedup: measured throughput, mean ± std over seeds, or for one seed "
              "its 95% bootstrap interval (every run's interval is in the Pareto plot and its report); F_bias is marked not meaningful when a run's card warns against it "
              "(base at chance, base gap ≤ 0, one class)."]
    groups = sorted(b.get("groups", {}))
    if groups:
        one_set = len({g.split("/")[0] for g in groups}) == 1
        headers = ["/".join(g.split("/")[1:]) if one_set else g for g in groups]
        lines += ["", "Challenge accuracy per group and gold label (%):", "",
                  f"| objective | {level} | " + " | ".join(headers) + " |", "|---|---|" + "---|" * len(groups),
                  "| base (teacher) | – | " + " | ".join(_fmt(b["groups"][g]) for g in groups) + " |"]
        for row in summary["rows"]:
            lines.append(f"| {row['objective']} | {row['level']:g} | "
                         + " | ".join(_fmt(row["groups"][g]) for g in groups) + " |")
    for seed, d in summary.get("difficulty", {}).items():
        lines += ["", f"Difficulty (seed {seed}, alpha {d['alpha']:g}): {d['schedule']}."]
        if d.get("agreement"):
            a = d["agreement"]
            lines.append(f"Variance split vs ground-truth hard flags on the {a['n']} training examples "
                         f"({a['n_hard']} hard): agreement {100 * a['topk']:.1f}% (top-k split; a random split "
                         f"of the same proportions: {100 * _chance(a):.1f}%), "
                         f"{100 * a['median']:.1f}% (median split), AUROC {a['auroc']:.3f}.")
    lines += _warnings(summary.get("runs") or [], level)
    if summary.get("plots"):
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in summary["plots"]]
    return "\n".join(lines) + "\n"


def _speedup(row: dict, records: list[dict]) -> str:
    """``1.52×`` ± std over seeds; one seed: ``1.52× [1.31, 1.77]`` (``not measurable`` when the
    interval includes 1)."""
    runs = [r for r in records if (r["objective"], r["level"]) == (row["objective"], row["level"])]
    speed = (runs[0].get("headline") or {}).get("speedup") if len(runs) == 1 else None
    if speed and not speed.get("timed", True) or row["speedup"]["mean"] is None:
        return "not timed"
    if not speed or speed.get("low") is None:
        return _fmt(row["speedup"], percent=False) + "×"
    return speedup_text(speed["value"], speed, speed["meaningful"])


def _warnings(records: list[dict], level: str) -> list[str]:
    """Each warning of the runs' cards once, with the runs it fired in."""
    runs: dict[str, list[str]] = {}
    for r in records:
        for warning in r.get("warnings") or []:
            runs.setdefault(warning, []).append(f"{r['objective']} {level}={r['level']:g} seed {r['seed']}")
    if not runs:
        return []
    return ["", f"## ⚠ Warnings of the runs ({sum(len(r.get('warnings') or []) for r in records)} in "
                f"{len(records)} runs)", ""] + [f"- {w} — {', '.join(names)}" for w, names in runs.items()]


def _chance(agreement: dict) -> float:
    q = agreement["n_hard"] / agreement["n"]
    return q * q + (1 - q) * (1 - q)


def write_sweep(summary: dict, out_dir: str | Path, plots: bool = True) -> None:
    """``sweep.json``, ``sweep.md``, ``sweep.html`` (the report card's renderer: one self-contained
    file) and, with ``plots``, the sweep plots and the Pareto plot (one point per run)."""
    out_dir = Path(out_dir)
    if plots:
        summary["plots"] = [p.name for p in sweep_plots(summary, out_dir)] + [pareto(summary, out_dir).name]
    atomic_write_json(out_dir / "sweep.json", summary)
    text = render_markdown(summary)
    atomic_write_text(out_dir / "sweep.md", text)
    atomic_write_text(out_dir / "sweep.html", render_html(text, out_dir, f"forgetless sweep: {summary['task']['name']}"))


def pareto(summary: dict, out_dir: Path) -> Path:
    """``pareto.png``: every run of the sweep, coloured by objective, labelled by its level."""
    level = level_name(summary)
    several = len({r["seed"] for r in summary["runs"]}) > 1
    points = [{"label": f"{level}={r['level']:g}" + (f" s{r['seed']}" if several else ""), "group": r["objective"],
               "numbers": r["headline"]} for r in summary["runs"] if r.get("headline")]
    return pareto_plot(points, out_dir / "pareto.png", f"{summary['task']['name']}: {summary['setup']['method']} "
                                                       f"sweep over {level}")
