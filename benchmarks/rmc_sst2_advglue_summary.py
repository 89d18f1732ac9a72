"""RMC Tables 1/4 and 2/5 at cpu scale (SST-2 → AdvGLUE-sst2): summarise the two sweeps that
`forgetless run rmc-table1-4-magnitude --scale cpu` and `forgetless run rmc-table2-5-students --scale
cpu` wrote, as one Markdown table per sweep: dev and AdvGLUE accuracy (mean ± std over seeds), the
drop of each from the teacher, F_bias (Du et al. eq. 1), each seed's run with the 95% bootstrap intervals
of its dev, AdvGLUE and F_bias, and the card's warnings.

    python benchmarks/rmc_sst2_advglue_summary.py runs/t1-sst2 runs/t2-sst2 > benchmarks/rmc_sst2_advglue_results.md
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _mean_std(values) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{100 * statistics.mean(values):.1f} ± {100 * std:.1f}"


def _seed_intervals(card: dict, challenge: str) -> str:
    """One run's compressed dev and challenge accuracy and its F_bias, each with its bootstrap interval."""
    sets = card["intervals"]["sets"]
    accuracy = [f"{_pct(sets[name]['compressed']['accuracy'])} [{_pct(sets[name]['compressed']['low'])}, "
                f"{_pct(sets[name]['compressed']['high'])}]" for name in ("dev", challenge)]
    f_bias = card["intervals"].get("f_bias") or {}
    fb = "–" if f_bias.get("f_bias") is None else f"{f_bias['f_bias']:.2f} [{f_bias['low']:.2f}, {f_bias['high']:.2f}]"
    return f"s{card['seed']}: " + " / ".join(accuracy + [fb])


def summarise(folder: Path) -> list[str]:
    sweep = json.loads((folder / "sweep.json").read_text())
    setup = sweep["setup"]
    level = setup["level_option"]
    cards = {}
    for report in sorted((folder / "runs").glob("*/report.json")):
        card = json.loads(report.read_text())
        value = card["method"]["config"][level]
        cards.setdefault(value, []).append(card)
    first = next(iter(cards.values()))[0]
    base_dev = first["sets"]["dev"]["base"]["accuracy"]
    challenge = next(name for name in first["sets"] if name != "dev")
    base_adv = first["sets"][challenge]["base"]["accuracy"]
    lines = [f"## {folder.name}: {setup['method']} by `{level}` (seeds {setup['seeds']}, one shared teacher)", "",
             f"Teacher: dev {_pct(base_dev)}, {challenge} {_pct(base_adv)} (n = {first['sets']['dev']['base']['n']} / "
             f"{first['sets'][challenge]['base']['n']}).", "",
             f"| {level} | seeds done | dev | {challenge} | dev drop | {challenge} drop | F_bias | per seed: dev / {challenge} "
             "/ F_bias, 95% bootstrap interval | warnings |", "|---|---|---|---|---|---|---|---|---|"]
    for value, group in sorted(cards.items()):
        dev = [c["sets"]["dev"]["compressed"]["accuracy"] for c in group]
        adv = [c["sets"][challenge]["compressed"]["accuracy"] for c in group]
        fbias = [c["bias"]["f_bias"] for c in group]
        intervals = "; ".join(_seed_intervals(c, challenge) for c in group)
        warned = sorted({w.split(":")[0] for c in group for w in c["warnings"]})
        fb = [f for f in fbias if f is not None]
        lines.append(f"| {value} | {len(group)} | {_mean_std(dev)} | {_mean_std(adv)} | {100 * (base_dev - statistics.mean(dev)):.1f} | "
                     f"{100 * (base_adv - statistics.mean(adv)):.1f} | "
                     f"{statistics.mean(fb):.2f} ± {statistics.stdev(fb) if len(fb) > 1 else 0:.2f} | {intervals} | "
                     f"{'; '.join(warned) or '–'} |")
    return lines + [""]


def main(argv: list[str]) -> int:
    print("# RMC Tables 1/4 and 2/5 at cpu scale: SST-2 → AdvGLUE-sst2 (MiniLM-L6)\n")
    for folder in argv:
        print("\n".join(summarise(Path(folder))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
