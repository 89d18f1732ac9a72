"""The summary panel at the top of ``report.html``: the one-line verdict, the headline deltas as
coloured tiles (green: better than the base, red: worse, grey: no change, no interval that excludes
1, or a number the warnings call meaningless), each with its 95% bootstrap interval, and the card's
warnings. Numbers come from ``report/headline.py``; this module only lays them out as HTML.
"""
from __future__ import annotations

import html

from .headline import delta_points, estimate_text, headline_numbers, scale_of, verdict


def summary_panel(card: dict) -> str:
    """The panel's HTML (a ``<section class="summary">``)."""
    n = headline_numbers(card)
    scale = scale_of(n["metric"])
    unit = "%" if n["metric"] == "accuracy" else ""
    llm = card.get("llm")
    label = f"mean {n['metric']}, {len(llm['headline_tasks'])} LLM tasks" if llm else f"dev {n['metric']}"
    tiles = [_accuracy_tile(label, n["dev"], scale, unit)]
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
    tiles += [_size_tile(n["params"]), _speed_tile(n["speedup"])]
    warnings = "".join(f"<li>{html.escape(w)}</li>" for w in n["warnings"])
    return (f'<section class="summary"><p class="verdict">{html.escape(verdict(card, n))}</p>'
            f'<div class="tiles">{"".join(tiles)}</div>'
            + (f'<ul class="warnings" title="warnings">{warnings}</ul>' if warnings else "") + "</section>\n")


def _tile(label: str, value: str, detail: str, tone: str) -> str:
    return (f'<div class="tile {tone}"><div class="label">{html.escape(label)}</div>'
            f'<div class="value">{html.escape(value)}</div><div class="detail">{html.escape(detail)}</div></div>')


def _accuracy_tile(label: str, entry: dict, scale: float, unit: str) -> str:
    points = delta_points(entry, scale)
    if points is None:
        return _tile(label, "–", "no examples", "neutral")
    tone = "neutral" if abs(points) < 0.05 else ("good" if points > 0 else "bad")
    detail = f"base {estimate_text(entry['base'], scale)}{unit} → {estimate_text(entry['compressed'], scale)}{unit}"
    return _tile(label, f"{points:+.1f} pts", detail, tone)


def _llm_tiles(card: dict) -> list[str]:
    """Flips and KL pooled over the tasks above chance, and WikiText-2 perplexity (``report/llm_section``)."""
    tiles = []
    pooled = card["llm"].get("pooled")
    if pooled:
        f, kl = pooled["flips"], pooled["kl"]
        tone = "bad" if f["mcnemar_p"] < 0.05 and f["correct_to_wrong"] > f["wrong_to_correct"] else (
            "good" if f["mcnemar_p"] < 0.05 else "neutral")
        tiles.append(_tile("flips: correct→wrong / wrong→correct", f"{f['correct_to_wrong']} / {f['wrong_to_correct']}",
                           f"{100 * f['flip_rate']:.1f}% of {f['n']} items flip; McNemar p {f['mcnemar_p']:.3g}", tone))
        tiles.append(_tile("KL(base‖compressed) over choices", f"{kl['value']:.3f}",
                           f"[{kl['low']:.3f}, {kl['high']:.3f}] nats, mean per item", "neutral"))
    lm = card.get("language_model")
    if lm:
        b, c = lm["base"]["perplexity"], lm["compressed"]["perplexity"]
        tone = "bad" if c > 1.005 * b else ("good" if c < 0.995 * b else "neutral")
        tiles.append(_tile("WikiText-2 perplexity", f"{b:.1f} → {c:.1f}",
                           f"{c / b:.2f}×; windows of {lm['base']['window']} tokens", tone))
    return tiles


def _f_bias_tile(f_bias: dict) -> str:
    span = f" [{f_bias['low']:.2f}, {f_bias['high']:.2f}]" if f_bias["low"] is not None else ""
    if not f_bias["meaningful"]:
        return _tile("F_bias (relative bias)", f"{f_bias['value']:.2f}", f"{span.strip()} not meaningful (warnings)",
                     "neutral")
    tone = "neutral" if abs(f_bias["value"] - 1) < 0.005 else ("good" if f_bias["value"] < 1 else "bad")
    return _tile("F_bias (relative bias)", f"{f_bias['value']:.2f}", f"{span.strip()} (1: as biased as the base)", tone)


def _size_tile(params: dict) -> str:
    ratio = params["ratio"]
    tone = "good" if ratio < 0.995 else ("bad" if ratio > 1.005 else "neutral")
    detail = f"{params['compressed']:,} of {params['base']:,} parameters"
    if abs(params["nonzero_ratio"] - ratio) > 0.005:
        detail += f"; {params['nonzero_ratio']:.2f}× non-zero"
    return _tile("size", f"{ratio:.2f}×", detail, tone)


def _speed_tile(speed: dict) -> str:
    span = f"[{speed['low']:.2f}, {speed['high']:.2f}]" if speed["low"] is not None else ""
    if not speed["meaningful"]:
        return _tile(f"speedup ({speed['what']})", f"{speed['value']:.2f}×",
                     f"{span} no weights removed: noise", "neutral")
    if not speed["measurable"]:
        return _tile(f"speedup ({speed['what']})", f"{speed['value']:.2f}×", f"{span} includes 1: not measurable",
                     "neutral")
    return _tile(f"speedup ({speed['what']})", f"{speed['value']:.2f}×", span, "good" if speed["value"] > 1 else "bad")
