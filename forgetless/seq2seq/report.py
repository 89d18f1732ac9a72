"""Seq2seq report card: quality (METEOR / ROUGE) and generation speedup side by side, as JSON and
Markdown, written atomically."""
from __future__ import annotations

from pathlib import Path

from ..fsutil import atomic_write_json, atomic_write_text


def _fmt(value, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def markdown(report: dict) -> str:
    lines = [f"# forgetless seq2seq report: {report.get('task')}", ""]
    if report.get("protocol"):
        lines += [f"Protocol: {report['protocol']}", ""]
    rows = report.get("models", {})
    lines += ["| model | params (M) | enc / dec layers | METEOR | ROUGE-1 | ROUGE-2 | ROUGE-L | latency (s) | speedup |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in rows.items():
        dev = row.get("eval", {}).get("dev", {})
        layers = row.get("layers", {})
        lines.append(f"| {name} | {_fmt(row.get('params', 0) / 1e6)} | {layers.get('encoder', '?')} / "
                     f"{layers.get('decoder', '?')} | {_fmt(dev.get('meteor'))} | {_fmt(dev.get('rouge1'))} | "
                     f"{_fmt(dev.get('rouge2'))} | {_fmt(dev.get('rougeL'))} | {_fmt(row.get('latency'), 3)} | "
                     f"{_fmt(row.get('speedup'))}× |")
    extra_sets = sorted({s for row in rows.values() for s in row.get("eval", {}) if s != "dev"})
    for s in extra_sets:
        lines += ["", f"Evaluation set {s}: " + ", ".join(
            f"{name} ROUGE-L {_fmt(row['eval'][s].get('rougeL'))}" for name, row in rows.items() if s in row.get("eval", {}))]
    speed = report.get("speed", {}).get("setting")
    if speed:
        lines += ["", "Speed: " + ", ".join(f"{k} {v}" for k, v in speed.items()) +
                  " (median of interleaved repeats, all decoding steps)."]
    stages = {row.get("eval", {}).get("dev", {}).get("meteor_stages") for row in rows.values()} - {None}
    if stages:
        lines += [f"METEOR matching stages: {', '.join(sorted(stages))}."]
    for note in report.get("notes", []):
        lines.append(f"- {note}")
    return "\n".join(lines) + "\n"


def write_report(report: dict, output_dir: str | Path) -> Path:
    output_dir = Path(output_dir)
    atomic_write_json(output_dir / "report.json", report)
    atomic_write_text(output_dir / "report.md", markdown(report))
    return output_dir / "report.md"
