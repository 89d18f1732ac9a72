"""The Pareto plot of compressed models: dev and challenge accuracy against parameters and against
the measured throughput speedup, every point with its 95% bootstrap intervals as error bars (the
accuracy interval vertically, the speedup interval horizontally; ``report/headline.py``), and the
Pareto front (the points no other point beats on both axes) as a dotted line. Used by sweeps (one
point per run) and ``forgetless compare`` (one point per run folder).
"""
from __future__ import annotations

from pathlib import Path

from .plots import plt, save_figure
from .rmc_plots import COLORS

PANELS = (("dev", "params", "dev accuracy vs parameters"), ("dev", "speedup", "dev accuracy vs measured speedup"),
          ("challenge", "params", "challenge accuracy vs parameters"),
          ("challenge", "speedup", "challenge accuracy vs measured speedup"))


def pareto_front(points: list[tuple[float, float]], fewer_is_better: bool) -> list[int]:
    """Indices of the points no other point dominates: y at least as high and x at least as good
    (lower when ``fewer_is_better``, else higher), strictly better in one; sorted by x."""
    def better(a, b):
        x_ok = a[0] <= b[0] if fewer_is_better else a[0] >= b[0]
        return x_ok and a[1] >= b[1] and a != b
    front = [i for i, p in enumerate(points) if not any(better(q, p) for q in points)]
    return sorted(front, key=lambda i: points[i][0])


def _x(numbers: dict, axis: str, role: str):
    if axis == "params":
        return numbers["params"][role] / 1e6, None, None
    if role == "base":
        return 1.0, None, None
    s = numbers["speedup"]
    return s["value"], s["low"], s["high"]  # value None: speed not timed, the point is left out


def pareto_plot(points: list[dict], path: str | Path, title: str) -> Path:
    """2 × 2 panels (``PANELS``) of ``points`` (a run each: ``{label, group, numbers}``, its label
    written beside it, its group its colour, its ``headline_numbers``); each base model is a black
    star (speedup 1), each compressed model a dot. A panel with no challenge accuracy says so."""
    fig, axes = plt.subplots(2, 2, figsize=(11, 7.5))
    groups = list(dict.fromkeys(p["group"] for p in points))
    for ax, (metric, axis, heading) in zip(axes.flat, PANELS):
        drawn, bases = [], set()
        for point in points:
            entry = point["numbers"][metric]
            if not entry or entry["compressed"]["value"] is None:
                continue
            scale = 100.0 if point["numbers"]["metric"] == "accuracy" or metric == "challenge" else 1.0
            base = entry["base"]
            bx = _x(point["numbers"], axis, "base")[0]
            if (bx, base["value"]) not in bases:
                bases.add((bx, base["value"]))
                ax.errorbar([bx], [scale * base["value"]], yerr=_err(base, scale), fmt="*", color="black",
                            markersize=11, capsize=3, label="base" if len(bases) == 1 else None)
            x, low, high = _x(point["numbers"], axis, "compressed")
            if x is None:  # speed not timed (--speed): no point on a speedup axis
                continue
            value = entry["compressed"]
            xerr = [[x - low], [high - x]] if low is not None else None
            color = COLORS[groups.index(point["group"]) % len(COLORS)]
            ax.errorbar([x], [scale * value["value"]], yerr=_err(value, scale), xerr=xerr, fmt="o", color=color,
                        capsize=3, label=point["group"] if point["group"] not in [d[2] for d in drawn] else None)
            ax.annotate(point["label"], (x, scale * value["value"]), textcoords="offset points", xytext=(4, 4),
                        fontsize=7)
            drawn.append((x, scale * value["value"], point["group"]))
        if drawn:
            xy = [(x, y) for x, y, _ in drawn]
            front = pareto_front(xy, fewer_is_better=axis == "params")
            ax.plot([xy[i][0] for i in front], [xy[i][1] for i in front], ":", color="#555555", linewidth=1,
                    label="Pareto front")
            ax.legend(fontsize=7, loc="best")
        else:
            ax.text(0.5, 0.5, f"no {metric} accuracy in these runs", ha="center", va="center", transform=ax.transAxes)
        ax.set_title(heading, fontsize=10)
        ax.set_xlabel("parameters (millions)" if axis == "params" else "throughput speedup (×, 95% interval)")
        ax.set_ylabel(f"{metric} (%, 95% interval)")
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def _err(entry: dict, scale: float):
    if entry["low"] is None:
        return None
    return [[scale * (entry["value"] - entry["low"])], [scale * (entry["high"] - entry["value"])]]
