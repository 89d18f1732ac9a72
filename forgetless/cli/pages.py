"""``forgetless report`` and ``forgetless compare``: pages made from saved runs (``report.json`` +
``predictions.jsonl``); neither loads a model or imports torch."""
from __future__ import annotations


def cmd_report(args, config) -> int:
    from ..report.rerender import rerender

    paths = rerender(args.run)
    print(f"report: {paths['markdown']} and {paths['html']} (re-rendered from report.json)")
    return 0


def cmd_compare(args, config) -> int:
    from ..report.compare import compare_runs

    paths = compare_runs(args.runs, args.out, overwrite=args.overwrite)
    print(paths["markdown"].read_text())
    print(f"compare: {paths['markdown']} and {paths['html']} (plot: {paths['plot'].name})")
    return 0
