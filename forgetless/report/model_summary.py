"""The report card condensed into the ``summary`` a saved model's card needs
(``models.model_card.write_model_card``): headline table with bootstrap intervals, size, speed and
the warnings, so the model folder says what the compression cost wherever it is copied."""
from __future__ import annotations


def _metric_row(name: str, n, metric: str, base, compressed, intervals: dict) -> dict:
    """One row of the model card's table; ``intervals`` {role: {low, high}} of the two numbers."""
    row = {"set": name, "n": n, "metric": metric, "base": base, "compressed": compressed}
    for role in ("base", "compressed"):
        if (intervals.get(role) or {}).get("low") is not None:
            row[f"{role}_interval"] = [intervals[role]["low"], intervals[role]["high"]]
    return row


def model_card_summary(card: dict) -> dict:
    """``write_model_card`` summary from a report card (schema ``forgetless-report-2``)."""
    metric = card["task"]["metric"]
    intervals = card.get("intervals") or {}
    metrics = [_metric_row(name, entry["base"]["n"], metric, entry["base"].get(metric), entry["compressed"].get(metric),
                           (intervals.get("sets") or {}).get(name) or {}) for name, entry in card["sets"].items()]
    challenge = card.get("challenge")
    if challenge and challenge.get("base") is not None:
        pooled = intervals.get("challenge") or {}
        metrics.append(_metric_row("challenge pooled (" + " + ".join(challenge["sets"]) + ")",
                                   (pooled.get("base") or {}).get("n"), metric, challenge["base"],
                                   challenge["compressed"], pooled))
    params = card["params"]
    size = {"parameters_base": params["base"]["total"], "parameters_compressed": params["compressed"]["total"],
            "parameter_ratio": params["ratio"], "disk_bytes_compressed": params["compressed"].get("disk_bytes")}
    bias = card.get("bias") or {}
    f_bias = intervals.get("f_bias") or {}
    if bias.get("f_bias") is not None:
        size_or_note = f"{bias['f_bias']:.3f}" if bias.get("meaningful") else f"{bias['f_bias']:.3f} (not meaningful)"
        if f_bias.get("low") is not None:
            size_or_note += f" [{f_bias['low']:.3f}, {f_bias['high']:.3f}]"
        size["F_bias (Du et al. 2023 eq. 1)"] = size_or_note
    speed = card["speed"]
    timing = speed.get("timing") or {}
    summary_speed = {"mode": speed.get("mode"), "device": speed.get("device"), "threads": speed.get("threads"),
                     "latency_speedup": speed["latency_ms"]["speedup"],
                     "throughput_speedup": speed["throughput_per_s"]["speedup"]}
    for part in ("latency", "throughput"):
        interval = (timing.get(part) or {}).get("speedup")
        if interval:
            summary_speed[f"{part}_speedup_95%"] = f"[{interval['low']:.2f}, {interval['high']:.2f}]" + \
                ("" if interval["measurable"] else " (no measurable speedup)")
    if not speed.get("meaningful"):
        summary_speed["note"] = "weights zeroed, not removed: no speedup expected"
    method = card["method"]
    base = str(card["run"].get("model") or "model").rstrip("/").split("/")[-1]
    return {"model_name": f"{base}-{method['name']}-{card['task']['name']}", "base_model": card["run"].get("model"), "method": method["name"], "method_options": method["config"],
            "objective": method["objective"], "task": card["task"]["name"], "metrics": metrics, "size": size,
            "speed": summary_speed, "warnings": list(card.get("warnings") or [])}
