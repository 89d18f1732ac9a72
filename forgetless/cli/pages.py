"""The commands that write pages from saved runs, loading no model: ``report`` (re-render a run's
card) and ``compare`` (several runs of one task side by side). They import the plotting library."""
from __future__ import annotations

from ..report.compare import compare_runs
from ..report.rerender import rerender


def cmd_report(args, config) -> int:
    paths = rerender(args.run)
    print(f"report: {paths['markdown']} and {paths['html']} (re-rendered from report.json)")
    return 0


def cmd_compare(args, config) -> int:
    paths = compare_runs(args.runs, args.out, overwrite=args.overwrite)
    print(paths["markdown"].read_text())
    print(f"compare: {paths['markdown']} and {paths['html']} (plot: {paths['plot'].name})")
    return 0
