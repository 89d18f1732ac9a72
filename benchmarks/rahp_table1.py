"""The RAHP paper's Table 1 layout from forgetless report cards: GLUE (dev) and AdvGLUE accuracy
per task for the base and the compressed model, their averages and ``Avg Δ = mean(GLUE) −
mean(AdvGLUE)``. Each argument is a run folder (or its report.json) of
``forgetless compress --task {sst2,rte,qnli,qqp} --data-dir ../shared/data ...``. Usage:

    python benchmarks/rahp_table1.py runs/sst2 runs/rte runs/qnli runs/qqp [--out table1.md]
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from forgetless.data.glue import advglue_table
from forgetless.errors import DataError
from forgetless.fsutil import atomic_write_text


def read_card(path: Path) -> dict:
    path = path / "report.json" if path.is_dir() else path
    if not path.is_file():
        raise DataError(f"{path}: no report.json")
    card = json.loads(path.read_text())
    if "advglue" not in card.get("sets", {}):
        raise DataError(f"{path}: task {card.get('task', {}).get('name')!r} has no AdvGLUE set (use sst2, rte, qnli, qqp)")
    return card


def table1(cards: list[dict]) -> dict:
    """``{"base": advglue_table, "compressed": advglue_table}`` over the given report cards."""
    out = {}
    for role in ("base", "compressed"):
        out[role] = advglue_table({c["task"]["name"]: {"glue": c["sets"]["dev"][role]["accuracy"],
                                                       "advglue": c["sets"]["advglue"][role]["accuracy"]}
                                   for c in cards})
    return out


def markdown(tables: dict, methods: list[str]) -> str:
    tasks = list(tables["base"]["tasks"])
    head = "| model | " + " | ".join(f"{t} GLUE | {t} AdvGLUE" for t in tasks) + " | avg GLUE | avg AdvGLUE | Avg Δ |"
    lines = [head, "|" + "---|" * (2 * len(tasks) + 4)]
    for role, label in (("base", "base"), ("compressed", f"compressed ({', '.join(sorted(set(methods)))})")):
        t = tables[role]
        cells = " | ".join(f"{100 * t['tasks'][k]['glue']:.1f} | {100 * t['tasks'][k]['advglue']:.1f}" for k in tasks)
        lines.append(f"| {label} | {cells} | {100 * t['avg_glue']:.1f} | {100 * t['avg_advglue']:.1f} "
                     f"| {100 * t['avg_delta']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    cards = [read_card(r) for r in args.runs]
    text = markdown(table1(cards), [c["method"]["name"] for c in cards])
    if args.out:
        atomic_write_text(args.out, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
