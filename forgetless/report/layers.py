"""Per-stack summary of what a one-shot method did to each linear layer, for the card
(``method.layers``) and its pages: the relative reconstruction error ``‖WX − ŴX‖_F / ‖WX‖_F`` on the
calibration inputs (``methods/_shared/hessian.py``; rtn: the relative weight error ``‖W − Ŵ‖_F /
‖W‖_F``) as min / median / max over the stack's linears, and the N:M check summed over them
(``methods/_shared/masks.nm_check``: groups with exactly n non-zeros, fewer, fewer because the base
weights were already zero, more). Read from each method's ``artifacts()["layers"]``.
"""
from __future__ import annotations

import statistics

from .card_types import Card

NM_COUNTS = ("groups", "exactly_n", "fewer_than_n", "fewer_base_zero", "more_than_n")
ERRORS = (("reconstruction_error", "reconstruction error (calibration outputs)"),
          ("weight_error", "weight error (rtn: no calibration)"))


def layer_summary(methods: list) -> list[dict]:
    """``[{method, stack, linears, error: {kind, min, median, max} | None, nm: {counts} | None}]``, one
    per (method, stack) in order, for methods that report per-layer entries."""
    rows = []
    for method in methods:
        entries = (method.artifacts() or {}).get("layers") or []
        stacks: dict[str, list[dict]] = {}
        for entry in entries:
            if isinstance(entry, dict) and "module" in entry:
                stacks.setdefault(entry.get("stack") or entry["module"].split(".")[0], []).append(entry)
        for stack, group in stacks.items():
            kind = next((key for key, _ in ERRORS if key in group[0]), None)
            values = [e[kind] for e in group if kind and e.get(kind) is not None]
            error = {"kind": kind, "min": min(values), "median": statistics.median(values), "max": max(values)} \
                if values else None
            checks = [e["nm"] for e in group if e.get("nm")]
            nm = {key: sum(int(c[key]) for c in checks) for key in NM_COUNTS} if checks else None
            rows.append({"method": method.config.name, "stack": stack, "linears": len(group), "error": error,
                         "nm": nm})
    return rows


def layers_markdown(card: Card) -> list[str]:
    """The table of ``method.layers`` (empty when no method reported layers)."""
    rows = card.method.layers
    if not rows:
        return []
    nm_shown = any(r["nm"] for r in rows)
    lines = ["", "## Per-layer errors and N:M check", "",
             "| method | stack | linears | error min | median | max |"
             + (" N:M groups | exactly n | fewer than n | of which base already zero | more than n |" if nm_shown
                else ""),
             "|---|---|---:|---:|---:|---:|" + ("---:|" * 5 if nm_shown else "")]
    for r in rows:
        e = r["error"]
        cells = ["–"] * 3 if e is None else [f"{e['min']:.4f}", f"{e['median']:.4f}", f"{e['max']:.4f}"]
        line = f"| {r['method']} | {r['stack']} | {r['linears']} | " + " | ".join(cells) + " |"
        if nm_shown:
            nm = r["nm"]
            line += (" " + " | ".join(f"{nm[k]:,}" for k in NM_COUNTS) + " |") if nm else " – | – | – | – | – |"
        lines.append(line)
    kinds = {r["error"]["kind"] for r in rows if r["error"]}
    lines += ["", "Errors: " + "; ".join(text for key, text in ERRORS if key in kinds) + ", relative (0: exact). "
              + ("N:M: every group of m consecutive inputs of a row should keep exactly n non-zeros; fewer means "
                 "the method zeroed more, or (the next column, a part of them) the base weights were already zero there."
                 if nm_shown else "")]
    return lines
