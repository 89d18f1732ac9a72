"""The Pareto plot of compressed models: dev and challenge accuracy (an LLM suite: the mean accuracy
of its tasks above chance) against size and against the measured throughput speedup, every point with
its 95% bootstrap intervals as error bars (the accuracy interval vertically, the speedup interval
horizontally; ``report/headline.py``), and the Pareto front (the points no other point beats on both
axes) as a dotted line. Size is megabytes on disk where every run's folders were measured (a quantized
model keeps its parameter count), else parameters. Only the panels some run has numbers for are
drawn: no challenge panels without a challenge set, no speedup panels when no speed was timed. Used
by sweeps (one point per run) and ``forgetless compare`` (one point per run folder).
"""
from __future__ import annotations

from pathlib import Path

from .plots import plt, save_figure
from .rmc_plots import COLORS

PANELS = (("dev", "params"), ("dev", "speedup"), ("challenge", "params"), ("challenge", "speedup"))


def pareto_front(points: list[tuple[float, float]], fewer_is_better: bool) -> list[int]:
    """Indices of the points no other point dominates: y at least as high and x at least as good
    (lower when ``fewer_is_better``, else higher), strictly better in one; sorted by x."""
    def better(a, b):
        x_ok = a[0] <= b[0] if fewer_is_better else a[0] >= b[0]
        return x_ok and a[1] >= b[1] and a != b
    front = [i for i, p in enumerate(points) if not any(better(q, p) for q in points)]
    return sorted(front, key=lambda i: points[i][0])


def _on_disk(points: list[dict]) -> bool:
    """Whether every run's size on disk, and its base's, is known (``headline.size_numbers``)."""
    return all((p["numbers"].get("size") or {}).get("compressed_bytes") and
               (p["numbers"].get("size") or {}).get("base_bytes") for p in points)


def _x(numbers: dict, axis: str, role: str, disk: bool = False):
    if axis == "params":
        if disk:
            return numbers["size"][f"{role}_bytes"] / 1e6, None, None
        return numbers["params"][role] / 1e6, None, None
    if role == "base":
        return 1.0, None, None
    s = numbers["speedup"]
    return s["value"], s["low"], s["high"]  # value None: speed not timed, the point is left out


def panels(points: list[dict]) -> list[tuple[str, str]]:
    """The ``PANELS`` some run has a number for: a compressed accuracy, and for a speedup axis a timed speedup."""
    def drawn(metric: str, axis: str) -> bool:
        return any((p["numbers"].get(metric) or {}).get("compressed", {}).get("value") is not None
                   and (axis == "params" or p["numbers"]["speedup"].get("value") is not None) for p in points)
    return [panel for panel in PANELS if drawn(*panel)]


def pareto_plot(points: list[dict], path: str | Path, title: str) -> Path:
    """The ``panels`` of ``points`` (a run each: ``{label, group, numbers}``, its label written beside
    it, its group its colour, its ``headline_numbers``), side by side; each base model is a black star
    (speedup 1), each compressed model a dot. Without any panel (no accuracy at all), one that says so."""
    shown = panels(points)
    disk = _on_disk(points)
    fig, axes = plt.subplots(1 if len(shown) <= 2 else 2, 1 if len(shown) <= 1 else 2, squeeze=False,
                             figsize=(11 if len(shown) > 1 else 6, 7.5 if len(shown) > 2 else 4.2))
    groups = list(dict.fromkeys(p["group"] for p in points))
    for ax, (metric, axis) in zip(axes.flat, shown):
        _panel(ax, points, metric, axis, disk, groups)
    for ax in list(axes.flat)[len(shown):]:
        ax.set_axis_off()
        if not shown:
            ax.text(0.5, 0.5, "no accuracy in these runs", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)


def _panel(ax, points: list[dict], metric: str, axis: str, disk: bool, groups: list) -> None:
    """One panel: the bases (stars) and compressed models (dots) with their intervals, the Pareto front."""
    drawn, bases = [], set()
    for point in points:
        entry = point["numbers"][metric]
        if not entry or entry["compressed"]["value"] is None:
            continue
        scale = 100.0 if point["numbers"]["metric"] == "accuracy" or metric == "challenge" else 1.0
        base = entry["base"]
        bx = _x(point["numbers"], axis, "base", disk)[0]
        if (bx, base["value"]) not in bases:
            bases.add((bx, base["value"]))
            ax.errorbar([bx], [scale * base["value"]], yerr=_err(base, scale), fmt="*", color="black",
                        markersize=11, capsize=3, label="base" if len(bases) == 1 else None)
        x, low, high = _x(point["numbers"], axis, "compressed", disk)
        if x is None:  # speed not timed (--speed): no point on a speedup axis
            continue
        value = entry["compressed"]
        xerr = [[x - low], [high - x]] if low is not None else None
        color = COLORS[groups.index(point["group"]) % len(COLORS)]
        ax.errorbar([x], [scale * value["value"]], yerr=_err(value, scale), xerr=xerr, fmt="o", color=color,
                    capsize=3, label=point["group"] if point["group"] not in [d[2] for d in drawn] else None)
        ax.annotate(point["label"], (x, scale * value["value"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
        drawn.append((x, scale * value["value"], point["group"]))
    xy = [(x, y) for x, y, _ in drawn]
    front = pareto_front(xy, fewer_is_better=axis == "params")
    ax.plot([xy[i][0] for i in front], [xy[i][1] for i in front], ":", color="#555555", linewidth=1,
            label="Pareto front")
    ax.legend(fontsize=7, loc="best")
    what = ("mean accuracy of the LLM tasks above chance" if "LLM" in points[0]["numbers"].get("where", "")
            else f"{metric} accuracy") if metric == "dev" else "challenge accuracy"
    on_disk = all("on disk" in (p["numbers"].get("size") or {}).get("what", "") for p in points)
    size = ("size on disk (MB)" if on_disk else "size of the weights (MB)") if disk else "parameters (millions)"
    ax.set_title(f"{what} vs {'size' if axis == 'params' else 'measured speedup'}", fontsize=10)
    ax.set_xlabel(size if axis == "params" else "throughput speedup (×, 95% interval)")
    ax.set_ylabel("% (95% interval)")
    ax.grid(alpha=0.3)


def _err(entry: dict, scale: float):
    if entry["low"] is None:
        return None
    return [[scale * (entry["value"] - entry["low"])], [scale * (entry["high"] - entry["value"])]]
