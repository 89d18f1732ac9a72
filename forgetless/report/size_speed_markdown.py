"""Markdown of a report card's size and speed sections (``card.py`` schema; ``markdown.py`` puts them
in the page): sizes against the file the user started from and bits per weight stored; every
speedup with its interval (``headline.speedup_text``), the spread, the load average, or why the
speed was not timed (``--speed``)."""
from __future__ import annotations

from ..serving.speed import served_markdown
from .card_types import Card, Speed
from .headline import megabytes as mb, num, sparsity, speedup_text
from .naming import quantized_layer_count, quantizes, zeroes_weights


def size_markdown(card: Card) -> list[str]:
    """Parameters, and bytes on disk against the file the user started from (``params.base.started_from``)
    beside the float32 folder the run read; bits per weight of what the saved folder stores."""
    params = card.params
    b, c = params.base, params.compressed
    lines = ["", "## Size", "", "| | base | compressed | ratio |", "|---|---:|---:|---:|",
             f"| parameters | {b['total']:,} | {c['total']:,} | {c['total'] / b['total']:.3f} |",
             f"| in transformer layers | {b['layers']:,} | {c['layers']:,} | {c['layers'] / max(1, b['layers']):.3f} |",
             *_zeros_rows(card)]
    start, disk = b.get("started_from"), c.get("disk_bytes")
    ratio = lambda base: f"{disk / base:.3f}" if disk and base else ""  # noqa: E731
    if start and start["bytes"] != b.get("disk_bytes"):
        lines.append(f"| on disk: {start['what']} | {mb(start['bytes'])} | {mb(disk)} | {ratio(start['bytes'])} |")
    lines.append(f"| on disk: the float32 folder the run read | {mb(b.get('disk_bytes'))} | {mb(disk)} | "
                 f"{ratio(b.get('disk_bytes'))} |")
    stored = params.stored
    if stored:
        q, overall = stored["quantized"], stored["overall"]
        lines.append(f"| bits per parameter stored (whole weights file) | {num(b.get('bits_per_parameter'))} | "
                     f"{num(overall['bits_per_parameter'])} | |")
        if q["bits_per_weight"] is not None:
            lines.append(f"| bits per weight in the {quantized_layer_count(card)} quantized layers (every tensor stored "
                         "for them) | "
                         f"32.00 | {num(q['bits_per_weight'])} | {q['bits_per_weight'] / 32:.3f} |")
    else:
        lines.append(f"| bits per parameter in the weights file | {num(b.get('bits_per_parameter'))} | "
                     f"{num(c.get('bits_per_parameter'))} | |")
    if quantizes(card):
        lines += ["", "The zeros of a quantization grid (weights rounded to the code of zero) are not sparsity: "
                      + ("sparsity here is the pruning method's own count of the weights it zeroed." if zeroes_weights(card)
                         else "a model that was only quantized has none, and its size is what it stores (bits per "
                              "weight, bytes on disk).")]
    return lines


def _zeros_rows(card: Card) -> list[str]:
    """Non-zero parameters and sparsity; after a quantizing method, the pruning method's own sparsity
    (``headline.sparsity``); none for a model that was only quantized."""
    b, c = card.params.base, card.params.compressed
    if quantizes(card) and not zeroes_weights(card):
        return []
    if quantizes(card):
        return [f"| sparsity of the prunable weights (zeros the pruning made) | {100 * b['prunable_sparsity']:.1f}% | "
                f"{100 * sparsity(card):.1f}% | |"]
    return [f"| non-zero | {b['nonzero']:,} | {c['nonzero']:,} | {c['nonzero'] / b['nonzero']:.3f} |",
            f"| prunable-weight sparsity | {100 * b['prunable_sparsity']:.1f}% | {100 * c['prunable_sparsity']:.1f}% | |"]


def _speed_row(label: str, values: dict | None, interval: dict | None, meaningful: bool, digits: int = 1) -> str:
    """A speed table row: both figures and the speedup with its interval (``headline.speedup_text``);
    a decode row without a figure (``kinds/causal_lm.speed`` sets None) says why."""
    if values is None or values.get("speedup") is None:
        note = (values or {}).get("note", "not measurable")
        return f"| {label} | – | – | {note} |"
    return (f"| {label} | {values['base']:.{digits}f} | {values['compressed']:.{digits}f} | "
            f"{speedup_text(values['speedup'], interval, meaningful)} |")


def speed_markdown(card: Card) -> list[str]:
    s = card.speed
    if not s.timed:
        return ["", "## Speed", "", f"{s.why_not_timed[0].upper()}{s.why_not_timed[1:]}.",
                *served_markdown(s.served)]
    cfg = s.config
    timing = s.timing or {}
    llm = s.mode == "prefill+decode"
    interval = lambda part: (timing.get(("prefill " if llm else "") + part) or {}).get("speedup")  # noqa: E731
    decode = lambda part: (timing.get(f"decode {part}") or {}).get("speedup")  # noqa: E731
    unit = "sequences" if s.mode == "generate" else "examples"
    meaningful = s.meaningful
    lines = ["", "## Speed (measured side by side in this run)", "",
             "| | base | compressed | speedup [95% interval] |", "|---|---:|---:|---:|",
             _speed_row(f"{'prefill ' if llm else ''}latency, batch {cfg['latency_batch']} (ms)", s.latency_ms,
                        interval("latency"), meaningful),
             _speed_row(f"{'prefill ' if llm else ''}throughput, batch {cfg['batch_size']} ({unit}/s)",
                        s.throughput_per_s, interval("throughput"), meaningful),
             *([_speed_row(f"decode with KV cache, batch {cfg['latency_batch']} (ms per token)",
                           s.decode_ms_per_token, decode("latency"), meaningful, 2)]
               if s.decode_ms_per_token else []),
             *([_speed_row(f"decode with KV cache, batch {cfg['batch_size']} (ms per step)",
                           s.decode_ms_per_token_batch, decode("throughput"), meaningful, 2)]
               if s.decode_ms_per_token_batch else []),
             *(["| FLOP limit (base / compressed FLOPs of a prefill) | | | "
                + (f"{s.flop_limit['ratio']:.2f}× (counted, not timed) |" if s.flop_limit.get("ratio") else
                   f"– ({s.flop_limit.get('why', 'not counted')}) |")] if s.flop_limit else []),
             "", f"{'Whole generate calls decoding ' + str(cfg['new_tokens']) + ' tokens (beam ' + str(cfg['num_beams']) + '), ' if s.mode == 'generate' else 'One forward pass, '}"
             f"input length {cfg['seq_len']}, median of {cfg['repeats']} after {cfg['warmup']} warm-up runs, "
             f"{s.threads} threads on {s.device}" + _load(s) + "."]
    spread = {part: t for part, t in timing.items() if "base" in t}
    if spread:
        lines += ["", "| spread (ms) | base median [IQR] | compressed median [IQR] |", "|---|---:|---:|"]
        for part, t in spread.items():
            b, c = t["base"], t["compressed"]
            lines.append(f"| {part} | {1e3 * b['median']:.1f} [{1e3 * b['q1']:.1f}–{1e3 * b['q3']:.1f}] | "
                         f"{1e3 * c['median']:.1f} [{1e3 * c['q1']:.1f}–{1e3 * c['q3']:.1f}] |")
        lines.append("")
        lines.append(f"Speedup intervals: percentile bootstrap of the ratio of medians over the {cfg['repeats']} "
                     f"repeats ({next(iter(spread.values()))['speedup']['n_resamples']} resamples); an interval "
                     "that includes 1 is no measurable speedup" + ("; decode: of the differences generate − prefill"
                                                                  if llm else "") + ".")
    if not meaningful:
        lines.append("This method zeroes or dequantizes weights without removing them: a dense model runs no faster, "
                     "and any difference above is noise (no speedup expected).")
    if s.engine:
        lines += ["", f"Timed by {s.engine}."]
    return lines + served_markdown(s.served)


def _load(speed: Speed) -> str:
    """``; load average 6.2 before, 6.8 after`` (1-minute, ``os.getloadavg``) when the card has it."""
    load = speed.load_average
    if not load:
        return ""
    return f"; load average {load['before'][0]:.1f} before, {load['after'][0]:.1f} after (1 min; a loaded machine " \
           "widens the intervals)"
