"""The report card condensed into the ``summary`` a saved model's card needs
(``models.model_card.write_model_card``): headline table with bootstrap intervals, size, speed and
the warnings, so the model folder says what the compression cost wherever it is copied."""
from __future__ import annotations


def _interval(intervals: dict | None, name: str, role: str) -> list | None:
    entry = ((intervals or {}).get("sets") or {}).get(name, {}).get(role)
    if not entry or entry.get("low") is None:
        return None
    return [entry["low"], entry["high"]]


def model_card_summary(card: dict) -> dict:
    """``write_model_card`` summary from a report card (schema ``forgetless-report-2``)."""
    metric = card["task"]["metric"]
    intervals = card.get("intervals")
    metrics = []
    for name, entry in card["sets"].items():
        row = {"set": name, "n": entry["base"]["n"], "metric": metric,
               "base": entry["base"].get(metric), "compressed": entry["compressed"].get(metric)}
        for role in ("base", "compressed"):
            interval = _interval(intervals, name, role)
            if interval:
                row[f"{role}_interval"] = interval
        metrics.append(row)
    challenge = card.get("challenge")
    if challenge and challenge.get("base") is not None:
        row = {"set": "challenge pooled (" + " + ".join(challenge["sets"]) + ")", "metric": metric,
               "base": challenge["base"], "compressed": challenge["compressed"]}
        pooled = (intervals or {}).get("challenge") or {}
        row["n"] = (pooled.get("base") or {}).get("n")
        for role in ("base", "compressed"):
            if (pooled.get(role) or {}).get("low") is not None:
                row[f"{role}_interval"] = [pooled[role]["low"], pooled[role]["high"]]
        metrics.append(row)
    params = card["params"]
    size = {"parameters_base": params["base"]["total"], "parameters_compressed": params["compressed"]["total"],
            "parameter_ratio": params["ratio"], "disk_bytes_compressed": params["compressed"].get("disk_bytes")}
    bias = card.get("bias") or {}
    f_bias = (intervals or {}).get("f_bias") or {}
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
