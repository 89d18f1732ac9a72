"""The headline numbers of one report card, each with its trust: dev and pooled challenge accuracy
(percentile-bootstrap intervals, ``report/honest.py``), F_bias (Du et al. 2023, eq. 1, paired
bootstrap interval; marked meaningless where the card's warnings say so), hard / easy accuracy, size
and the measured throughput speedup (bootstrap interval of the ratio of medians).

One home for what every page shows of a run: the summary panel of ``report.html``
(``report/summary.py``), ``forgetless compare`` (``report/compare.py``) and the sweep's rows and
Pareto plot (``sweep/table.py``, ``report/pareto.py``). Accuracies are fractions; for a generation
task ``dev`` holds the task's metric in % (ROUGE / METEOR), as on the card.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..llm.records import GENERATE
from .naming import quantizes, zeroes_weights
from .sections import method_sections

if TYPE_CHECKING:  # types only: comparison_text (which card_types' Comparison imports) reads this module
    from .card_types import JSON, Card, Interval

ROLES = ("base", "compressed")


def estimate(value, interval: JSON | Interval | None = None) -> dict:
    """``{"value", "low", "high"}`` (low / high None without an interval): ``interval`` a bootstrap ``Interval``
    (``card.intervals``) or an estimate of the card's JSON (an LLM suite's ``{"value", "low", "high"}``, F_bias's)."""
    if interval is None or isinstance(interval, dict):
        interval = interval or {}
        return {"value": value, "low": interval.get("low"), "high": interval.get("high")}
    return {"value": value, "low": interval.low, "high": interval.high}


def headline_numbers(card: Card) -> dict:
    """``{dev, challenge, hard, easy: {base, compressed: estimate} | None, challenge_sets, metric,
    deltas {dev, challenge: paired interval of compressed − base | None}, f_bias: {value, low, high,
    meaningful} | None, params: {base, compressed, ratio, nonzero_ratio}, size ``size_numbers``,
    speedup: {value, low, high, measurable, meaningful, what}, warnings}``."""
    metric = card.task.metric
    iv = card.intervals
    llm = card.llm
    paired = (iv.delta if iv else None) or {}
    if llm is not None:  # an LLM suite: the mean accuracy of its tasks above chance (report/llm_section.py)
        head = llm.headline or {}
        dev = {role: estimate((head.get(role) or {}).get("value"), head.get(role)) for role in ROLES}
        deltas = {"dev": head.get("delta"), "challenge": None}
    else:
        dev = set_estimates(card)["dev"]
        deltas = {"dev": (paired.get("sets") or {}).get("dev"), "challenge": paired.get("challenge")}
    challenge = card.challenge
    he = hard_easy_estimates(card)
    parts = {part: he[part] if he and card.hard_easy.base.get(f"n_{part}") else None for part in ("hard", "easy")}
    bias = card.bias
    f_bias = None
    if bias is not None and bias.f_bias is not None:
        f_bias = {**estimate(bias.f_bias, iv.f_bias if iv else None), "meaningful": bias.meaningful is not False}
    params = card.params
    where = f"on the mean of the {len(llm.headline_tasks)} LLM tasks above chance" if llm is not None else "on dev"
    return {"metric": metric, "dev": dev, "where": where, "challenge": challenge_estimates(card),
            "generation": generation_changes(card), "challenge_sets": list(challenge.sets if challenge else []),
            **parts, "deltas": deltas, "f_bias": f_bias,
            "params": {"base": params.base["total"], "compressed": params.compressed["total"],
                       "ratio": params.ratio, "nonzero_ratio": params.nonzero_ratio},
            "size": size_numbers(card), "speedup": speedup(card), "warnings": list(card.warnings)}


def set_estimates(card: Card) -> dict[str, dict[str, dict]]:
    """``{set: {role: estimate}}``: each set's metric for both models with its bootstrap interval (``card.intervals``;
    none for a generation task's sets)."""
    metric, intervals = card.task.metric, card.intervals.sets if card.intervals else {}
    return {name: {role: estimate(getattr(entry, role).get(metric), (intervals.get(name) or {}).get(role))
                   for role in ROLES} for name, entry in card.sets.items()}


def challenge_estimates(card: Card) -> dict[str, dict] | None:
    """``{role: estimate}``: the pooled challenge accuracy of both models with its bootstrap interval; None without
    a challenge set."""
    challenge, intervals = card.challenge, (card.intervals.challenge if card.intervals else None) or {}
    if challenge is None or challenge.base is None:
        return None
    return {role: estimate(getattr(challenge, role), intervals.get(role)) for role in ROLES}


def hard_easy_estimates(card: Card) -> dict[str, dict[str, dict]] | None:
    """``{hard, easy: {role: estimate}}``: dev accuracy on the hard and the easy examples with their bootstrap
    intervals (an empty part's without); None for a card without the split."""
    he, intervals = card.hard_easy, (card.intervals.hard_easy if card.intervals else None) or {}
    if he is None or not he.base:
        return None
    return {part: {role: estimate(getattr(he, role)[part], (intervals.get(role) or {}).get(part)) for role in ROLES}
            for part in ("hard", "easy")}


def size_numbers(card: Card) -> dict:
    """The compressed model's size against the base's, as every page compares runs: ``{ratio, what,
    compressed_bytes, base_bytes, sparsity}``. Bytes on disk of the saved folder against the float32
    folder the run read (a GPTQ 4-bit SmolLM2: 0.33×); without them, the stored weights against the
    base's float32 weights; else parameters. ``sparsity``: the share of zeros in the prunable weights
    where a method of the chain zeroes weights (``naming.zeroes_weights``; after a quantizing method,
    the pruning method's own count: the zeros of a quantization grid are not sparsity), else None."""
    params = card.params
    base, comp = params.base, params.compressed
    stored = (params.stored or {}).get("overall") or {}
    if comp.get("disk_bytes") and base.get("disk_bytes"):
        size = {"ratio": comp["disk_bytes"] / base["disk_bytes"], "what": "the base's float32 folder on disk",
                "compressed_bytes": comp["disk_bytes"], "base_bytes": base["disk_bytes"]}
    elif stored.get("bytes"):
        base_bytes = base["total"] * (base.get("bits_per_parameter") or 32) / 8
        size = {"ratio": stored["bytes"] / base_bytes, "what": "the base's float32 weights (stored weights)",
                "compressed_bytes": stored["bytes"], "base_bytes": base_bytes}
    else:
        size = {"ratio": params.ratio, "what": "the base parameters", "compressed_bytes": None, "base_bytes": None}
    return {**size, "sparsity": sparsity(card)}


def sparsity(card: Card) -> float | None:
    """Share of zero prunable weights the chain's pruning made (``size_numbers``), or None."""
    if not zeroes_weights(card):
        return None
    pruned = method_sections(card).sparsity
    if quantizes(card) and pruned is not None and pruned.reached is not None:
        return pruned.reached
    return card.params.compressed.get("prunable_sparsity")


def speedup(card: Card) -> dict:
    """The measured throughput speedup with its interval (a causal LM's: its prefill's); ``measurable``
    False when the interval includes 1; ``meaningful`` False when the method removed no weights
    (``card.speed.meaningful``); ``timed`` False (value None, ``why``) when the speed was not timed."""
    speed = card.speed
    what = "generation throughput" if speed.mode == "generate" else "throughput"
    if not speed.timed:
        return {"value": None, "low": None, "high": None, "measurable": False, "timed": False,
                "meaningful": bool(speed.meaningful), "why": speed.why_not_timed, "what": what}
    timing = speed.timing or {}
    interval = (timing.get("throughput") or timing.get("prefill throughput") or {}).get("speedup") or {}
    value = speed.throughput_per_s["speedup"]
    return {"value": interval.get("speedup", value), "low": interval.get("low"), "high": interval.get("high"),
            "measurable": interval.get("measurable", True), "meaningful": bool(speed.meaningful),
            "timed": True, "what": what}


def speedup_text(value: float | None, interval: dict | None, meaningful: bool = True) -> str:
    """A speedup as every page writes it: ``1.52× [1.31, 1.77]``, with ``not measurable`` when its
    interval includes 1 and ``no speedup expected`` when the method removed no weights; a figure is
    never shown without its interval when it has one."""
    interval = interval or {}
    value = interval.get("speedup", value)
    if value is None:
        return "not measurable" + (" (no speedup expected)" if not meaningful else "")
    text = f"{value:.2f}×" + (span_text(interval, 1, ".2f") or (" [unbounded]" if interval.get("unbounded") else ""))
    if interval and not interval.get("measurable", True):
        text += " not measurable"
    return text + ("" if meaningful else " (no speedup expected)")


def estimate_text(entry: dict | None, scale: float = 100.0, spec: str = ".1f") -> str:
    """``81.0 [75.5, 86.0]``: an estimate (``{"value", "low", "high"}``) × ``scale`` with its interval, each number
    formatted by ``spec`` (``+.1f``: signed points; ``.3f`` with ``scale`` 1: a KL in nats); "–" without a value."""
    if not entry or entry.get("value") is None:
        return "–"
    return format(scale * entry["value"], spec) + span_text(entry, scale, spec)


def span_text(entry: dict | None, scale: float = 100.0, spec: str = ".1f") -> str:
    """`` [75.5, 86.0]``: an estimate's (or an interval's) bounds × ``scale``, each formatted by ``spec``; "" without
    an interval."""
    if not entry or entry.get("low") is None:
        return ""
    return f" [{format(scale * entry['low'], spec)}, {format(scale * entry['high'], spec)}]"


def delta_points(entry: dict | None, scale: float = 100.0) -> float | None:
    """Compressed − base in points (percentage points of a fraction; ``scale`` 1 for % metrics)."""
    if not entry or entry["base"]["value"] is None or entry["compressed"]["value"] is None:
        return None
    return scale * (entry["compressed"]["value"] - entry["base"]["value"])


def pct(value) -> str:
    """A fraction in percent (``81.0``; ``–`` when unknown)."""
    return "–" if value is None else f"{100 * value:.1f}"


def num(value, spec: str = ".2f") -> str:
    """A number as the pages write it (``spec``: its format, two decimals by default); "–" when unknown."""
    return "–" if value is None else format(value, spec)


def megabytes(n: int | None) -> str:
    """Bytes as the card writes them (``12.3 MB``; ``–`` when unknown)."""
    return "–" if n is None else f"{n / 1e6:.1f} MB"


def scale_of(metric: str) -> float:
    """100 for accuracy (a fraction), 1 for ROUGE / METEOR (already in %)."""
    return 100.0 if metric == "accuracy" else 1.0


def verdict(card: Card, numbers: dict | None = None) -> str:
    """One short line: ``lost 3.1 points [-5.0, -1.2] on dev, lost 9.4 points [-14.9, -4.1] on advglue-sst2
    — loses more on the challenge set``. A change whose paired interval includes 0 is "not measurable"; without paired
    intervals (older cards), a difference of the two losses within one point is "about as much". "Unchanged" only
    where no item changed (a paired interval of [0, 0]); equal accuracies with items changed both ways are stated
    with their interval, and without paired intervals as "no net change"."""
    n = numbers or headline_numbers(card)
    scale = scale_of(n["metric"])
    unit = "points"
    d_dev = delta_points(n["dev"], scale)
    where = n.get("where", "on dev")
    if d_dev is None:
        if n.get("generation"):  # a suite of generation tasks only: their paired changes are the verdict
            return generation_verdict(n["generation"]) + _warned(n)
        return f"no {n['metric']} {where}: nothing to compare"
    deltas = n.get("deltas") or {}
    text = ("" if n["metric"] == "accuracy" else f"{n['metric']}: ") + _change(d_dev, unit, where, deltas.get("dev"),
                                                                             scale)
    d_ch = delta_points(n["challenge"], scale)
    if d_ch is not None:
        name = " + ".join(n["challenge_sets"]) or "the challenge sets"
        unmeasured = [d for d in (deltas.get("dev"), deltas.get("challenge")) if d and includes_zero(d)]
        if all(d and d.get("low") == d.get("high") == 0 for d in (deltas.get("dev"), deltas.get("challenge"))):
            return f"unchanged on dev and on {name}" + _warned(n)  # no item changed, on either
        if abs(d_dev) < 0.05 and abs(d_ch) < 0.05 and not deltas.get("dev") and not deltas.get("challenge"):
            return f"no net change on dev and on {name}" + _warned(n)  # no paired intervals: flips not known
        same_way = abs(d_dev) >= 0.05 and abs(d_ch) >= 0.05 and (d_ch < 0) == (d_dev < 0) and not deltas.get("challenge")
        text += ", " + (f"{abs(d_ch):.1f} on {name}" if same_way else
                        _change(d_ch, unit, f"on {name}", deltas.get("challenge"), scale))
        if not unmeasured:  # a change that is not measurable is not compared with the other
            text += _comparison(d_dev, d_ch)
    return text + _warned(n)


def generation_changes(card: Card) -> list[dict]:
    """``[{task, metric, delta}]``: each generation task's primary metric (lm-eval ``generate_until``, whose
    scales differ: they are not pooled) with the paired interval of compressed − base."""
    tasks = card.llm.tasks if card.llm is not None else {}
    return [{"task": name, "metric": t["metric"], "delta": t["score"]["delta"]} for name, t in tasks.items()
            if t.get("output_type") == GENERATE and (t.get("score") or {}).get("delta")]


def generation_verdict(changes: list[dict]) -> str:
    """``on the 7 generation tasks: lost 90.0 points [-100.0, -75.0] on passkey_256_offline acc, …; 3 not
    measurable``: the measurable changes, largest first, then how many are not (their intervals include 0)."""
    measurable = sorted((c for c in changes if not includes_zero(c["delta"])), key=lambda c: c["delta"]["value"])
    parts = [_change(100 * c["delta"]["value"], "points", f"on {c['task']} {c['metric']}", c["delta"])
             for c in measurable]
    rest = len(changes) - len(measurable)
    tasks = f"{len(changes)} generation task" + ("s" if len(changes) > 1 else "")
    if not parts:
        return f"no measurable change on the {tasks} (every interval includes 0)"
    return (f"on the {tasks}: " + ", ".join(parts)
            + (f"; {rest} not measurable" if rest else ""))


def _comparison(d_dev: float, d_ch: float) -> str:
    if abs(d_ch - d_dev) <= 1.0:
        return " — changes about as much on both"
    if d_ch < d_dev:
        return " — loses more on the challenge set" if d_ch < 0 else " — gains less on the challenge set"
    return " — loses less on the challenge set" if d_dev < 0 else " — gains more on the challenge set"


def includes_zero(interval: dict) -> bool:
    """A paired interval of compressed − base that does not exclude no change."""
    return interval.get("low") is not None and interval["low"] <= 0 <= interval["high"]


def delta_text(interval: dict | None, scale: float = 100.0, spec: str = "+.1f") -> str:
    """``-6.0 [-12.5, +1.0] not measurable``: a paired change in points (``spec``: the numbers' format) with its
    interval, and "not measurable" when the interval includes 0 ("no change" when every resample gives 0)."""
    text = estimate_text(interval, scale, spec)
    if text == "–" or interval.get("low") is None:
        return text
    if interval["low"] == interval["high"] == 0:
        return text + " no change"
    return text + (" not measurable" if includes_zero(interval) else "")


def _warned(numbers: dict) -> str:
    count = len(numbers["warnings"])
    return f" ({count} warning{'s' if count > 1 else ''}: read them first)" if count else ""


def _change(points: float, unit: str, where: str, interval: dict | None = None, scale: float = 100.0) -> str:
    """``lost 3.1 points on dev`` / ``gained …``; with the paired ``interval``: ``lost 3.1 points [-5.0, -1.2]
    on dev``, ``-3.1 points [-6.5, +0.4] on dev: not measurable (the interval includes 0)``, or ``unchanged on
    dev`` (an interval of [0, 0]: no item changed). Without an interval a change below 0.05 points is ``no net
    change on dev`` (items may have changed both ways)."""
    span = span_text(interval, scale, "+.1f")
    if span:
        if interval["low"] == interval["high"] == 0:
            return f"unchanged {where}"
        if includes_zero(interval):
            return f"{points:+.1f} {unit}{span} {where}: not measurable (the interval includes 0)"
    if abs(points) < 0.05:
        return f"no net change {where}"
    return f"{'lost' if points < 0 else 'gained'} {abs(points):.1f} {unit}{span} {where}"


def paired_cells(score: dict) -> str:
    """``45.2 [40.8, 49.6] | 43.0 [38.5, 47.6] | -2.2 [-4.0, -0.4]``: a paired score's table cells (both models
    with their intervals, then the change with its paired interval: ``{"base", "compressed", "delta"}``)."""
    return f"{estimate_text(score['base'])} | {estimate_text(score['compressed'])} | {delta_text(score['delta'])}"


def flip_cells(flips: dict) -> str:
    """``12 | 5 | 0.143``: the table cells of flips correct → wrong, wrong → correct and the McNemar p ("–" each
    where the metric has no flips)."""
    return " | ".join([str(flips.get("correct_to_wrong", "–")), str(flips.get("wrong_to_correct", "–")),
                       p_text(flips.get("mcnemar_p"))])


def p_text(p: float | None) -> str:
    return "–" if p is None else ("< 0.001" if p < 0.001 else f"{p:.3f}")
