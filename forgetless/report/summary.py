"""The summary panel at the top of ``report.html``: the one-line verdict, the headline deltas as
coloured tiles (green: better than the base, red: worse, grey: no change — an interval that includes
no change (a speedup or F_bias interval that includes 1, a paired accuracy difference whose interval
includes 0, or, without a paired interval, base and compressed intervals that overlap), a speed not
timed, or a number the warnings call meaningless), each with its 95% bootstrap interval, and the
card's warnings. Numbers come from ``report/headline.py``; this module only lays them out as HTML.
"""
from __future__ import annotations

import html

from .card_types import Card, Params
from .headline import (delta_points, estimate_text, headline_numbers, includes_zero, megabytes, scale_of, span_text,
                       speedup_text, verdict)


def summary_panel(card: Card) -> str:
    """The panel's HTML (a ``<section class="summary">``)."""
    n = headline_numbers(card)
    scale = scale_of(n["metric"])
    unit = "%" if n["metric"] == "accuracy" else ""
    llm = card.llm
    label = (f"mean accuracy (acc_norm where a task has it), {len(llm.headline_tasks)} LLM tasks above chance"
             if llm else f"dev {n['metric']}")
    paired = ((llm.headline if llm else None) or {}).get("delta")  # an LLM suite's paired interval of the mean
    tiles = [_accuracy_tile(label, n["dev"], scale, unit, paired)]
    if llm:
        tiles += _llm_tiles(card)
    if n["challenge"]:
        name = " + ".join(n["challenge_sets"])
        tiles.append(_accuracy_tile(name if name == "challenge" else f"challenge: {name}", n["challenge"], scale, unit))
    for part in ("hard", "easy"):
        if n[part]:
            tiles.append(_accuracy_tile(f"dev {part}", n[part], scale, unit))
    if n["f_bias"]:
        tiles.append(_f_bias_tile(n["f_bias"]))
    tiles += [_size_tile(n["params"], card.params), _speed_tile(n["speedup"])]
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in n["warnings"])
    return (f'<section class="summary"><p class="verdict">{html.escape(verdict(card, n))}</p>'
            f'<div class="tiles">{"".join(tiles)}</div>'
            + (f'<ul class="warnings" title="warnings">{warnings}</ul>' if warnings else "") + "</section>\n")


def _tile(label: str, value: str, detail: str, tone: str) -> str:
    return (f'<div class="tile {tone}"><div class="label">{html.escape(label)}</div>'
            f'<div class="value">{html.escape(value)}</div><div class="detail">{html.escape(detail)}</div></div>')


def _accuracy_tile(label: str, entry: dict, scale: float, unit: str, paired: dict | None = None) -> str:
    """Grey unless the change is outside the noise: ``paired`` (the interval of compressed − base)
    excludes 0, or, without one, the two models' intervals do not overlap."""
    points = delta_points(entry, scale)
    if points is None:
        return _tile(label, "–", "no examples", "neutral")
    tone = "neutral" if abs(points) < 0.05 or _includes_no_change(entry, paired) else ("good" if points > 0 else "bad")
    detail = f"base {estimate_text(entry['base'], scale)}{unit} → {estimate_text(entry['compressed'], scale)}{unit}"
    if paired and paired.get("low") is not None:
        detail += f"; Δ{span_text(paired, scale, '+.1f')}"
    return _tile(label, f"{points:+.1f} pts", detail, tone)


def _includes_no_change(entry: dict, paired: dict | None) -> bool:
    if paired and paired.get("low") is not None:
        return includes_zero(paired)
    b, c = entry["base"], entry["compressed"]
    if b["low"] is None or c["low"] is None:
        return False
    return b["low"] <= c["high"] and c["low"] <= b["high"]


def _llm_tiles(card: Card) -> list[str]:
    """Flips and KL pooled over the tasks above chance, and WikiText-2 perplexity (``report/llm_section``)."""
    tiles = []
    pooled = card.llm.pooled
    if pooled:
        f, kl = pooled["flips"], pooled["kl"]
        tone = "bad" if f["mcnemar_p"] < 0.05 and f["correct_to_wrong"] > f["wrong_to_correct"] else (
            "good" if f["mcnemar_p"] < 0.05 else "neutral")
        tiles.append(_tile("flips: correct→wrong / wrong→correct", f"{f['correct_to_wrong']} / {f['wrong_to_correct']}",
                           f"{100 * f['flip_rate']:.1f}% of {f['n']} items flip; McNemar p {f['mcnemar_p']:.3g}", tone))
        tiles.append(_tile("KL(base‖compressed) over choices", f"{kl['value']:.3f}",
                           f"[{kl['low']:.3f}, {kl['high']:.3f}] nats, mean per item", "neutral"))
    lm = card.language_model
    if lm:
        b, c = lm.base["perplexity"], lm.compressed["perplexity"]
        tone = "bad" if c > 1.005 * b else ("good" if c < 0.995 * b else "neutral")
        tiles.append(_tile("WikiText-2 perplexity", f"{b:.1f} → {c:.1f}",
                           f"{c / b:.2f}×; windows of {lm.base['window']} tokens", tone))
    return tiles


def _f_bias_tile(f_bias: dict) -> str:
    span = span_text(f_bias, 1, ".2f").strip()
    if not f_bias["meaningful"]:
        detail, tone = "not meaningful (warnings)", "neutral"
    elif f_bias["low"] is not None and f_bias["low"] <= 1 <= f_bias["high"]:
        detail, tone = "includes 1: no measurable change in bias", "neutral"
    else:
        detail = "(1: as biased as the base)"
        tone = "neutral" if abs(f_bias["value"] - 1) < 0.005 else ("good" if f_bias["value"] < 1 else "bad")
    return _tile("F_bias (relative bias)", f"{f_bias['value']:.2f}", f"{span} {detail}", tone)


def _size_tile(params: dict, sizes: Params) -> str:
    """Bytes on disk of the saved folder against the file the user started from (the base folder, or
    a converted base's own file: SmolLM2's 4-bit GGUF), with bits per weight of what is stored; before
    the model is saved, parameters."""
    start, disk = sizes.base.get("started_from"), sizes.compressed.get("disk_bytes")
    stored = (sizes.stored or {}).get("overall") or {}
    quantized = (sizes.stored or {}).get("quantized") or {}
    if start and disk:
        label, ratio = "size on disk", disk / start["bytes"]
        detail = f"{megabytes(disk)} vs {megabytes(start['bytes'])} ({start['what']})"
        fp32 = sizes.base.get("disk_bytes")
        if fp32 and fp32 != start["bytes"]:
            detail += f"; {disk / fp32:.2f}× its float32 folder"
        if quantized.get("bits_per_weight"):
            detail += f"; {quantized['bits_per_weight']:.2f} bits per quantized weight"
    elif stored.get("bytes"):  # no base file (a model built in memory): against its float32 weights
        base_bytes = params["base"] * (sizes.base.get("bits_per_parameter") or 32) / 8
        label, ratio = "size of the stored weights", stored["bytes"] / base_bytes
        detail = (f"{megabytes(stored['bytes'])} of weights stored vs {megabytes(base_bytes)} of the base's float32 "
                  f"weights; {stored['bits_per_parameter']:.2f} bits per parameter")
        if quantized.get("bits_per_weight"):
            detail += f", {quantized['bits_per_weight']:.2f} per quantized weight"
    else:
        label, ratio = "size (parameters)", params["ratio"]
        detail = f"{params['compressed']:,} of {params['base']:,} parameters"
        if abs(params["nonzero_ratio"] - ratio) > 0.005:
            detail += f"; {params['nonzero_ratio']:.2f}× non-zero"
    tone = "good" if ratio < 0.995 else ("bad" if ratio > 1.005 else "neutral")
    return _tile(label, f"{ratio:.2f}×", detail, tone)


def _speed_tile(speed: dict) -> str:
    """Grey unless the speedup's interval excludes 1 and weights were removed; a figure whose interval
    includes 1 is shown only with that interval, never alone."""
    label = f"speedup ({speed['what']})"
    if not speed["timed"]:
        return _tile(label, "not timed", speed["why"], "neutral")
    if not speed["meaningful"]:
        return _tile(label, "none expected", f"{speedup_text(speed['value'], speed)}: no weights removed, noise",
                     "neutral")
    if not speed["measurable"]:
        return _tile(label, "not measurable", f"{speedup_text(speed['value'], speed)}: the interval includes 1",
                     "neutral")
    span = span_text(speed, 1, ".2f").strip()
    return _tile(label, f"{speed['value']:.2f}×", span, "good" if speed["value"] > 1 else "bad")
