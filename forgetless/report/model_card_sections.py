"""The sections of a model card made from a run's report card (``model_card.model_card_summary``):
the results table by task kind (classification: every set and the pooled challenge accuracy with
intervals; an LLM suite: every lm-eval task with both models' intervals, the paired interval of the
change, flips, KL and the at-chance flag, the mean of the tasks above chance, and perplexity with the
tokens actually scored), size against the file the user started from and bits per weight stored,
every speedup with its interval (or why it was not timed), the base's provenance, and per method
what a user gets where (issue 30: structural removal is measured here; zeros give no speedup on CPU
nor in current vLLM; int4 compressed-tensors saves disk and GPU memory, with vLLM's GPU kernels)."""
from __future__ import annotations

from pathlib import Path

from .headline import (ROLES, challenge_estimates, delta_text, estimate, estimate_text, megabytes as mb, set_estimates,
                       span_text, speedup_text)
from .card_types import Card
from ..quantization.format import QuantFormat
from .naming import method_label, quantized_layer_count


# ----- the results table -------------------------------------------------------------------------------
def number(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def with_interval(value, interval) -> str:
    if value is None or not interval:
        return number(value)
    low, high = interval
    return f"{number(value)} [{number(low)}, {number(high)}]"


def _delta(row: dict) -> str:
    base, comp = row.get("base"), row.get("compressed")
    if not isinstance(base, (int, float)) or not isinstance(comp, (int, float)):
        return "–"
    interval = row.get("delta_interval")
    if not interval:
        return number(comp - base)
    return delta_text({"value": comp - base, "low": interval[0], "high": interval[1]}, 1, "+.4f")


def results_table(rows: list[dict]) -> list[str]:
    """The model card's results: both models' numbers with their intervals and the change (with its
    paired interval, "not measurable" when it includes 0); flips, KL and notes where rows have them."""
    extra = [key for key in ("flips", "kl", "note") if any(row.get(key) for row in rows)]
    heads = {"flips": "flips correct→wrong / wrong→correct", "kl": "KL(base‖compressed)", "note": "note"}
    lines = ["| set | metric | n | base | compressed | Δ |" + "".join(f" {heads[k]} |" for k in extra),
             "|---|---|---|---|---|---|" + "---|" * len(extra)]
    for row in rows:
        lines.append(f"| {row['set']} | {row.get('metric', 'accuracy')} | {number(row.get('n'))} | "
                     f"{with_interval(row.get('base'), row.get('base_interval'))} | "
                     f"{with_interval(row.get('compressed'), row.get('compressed_interval'))} | {_delta(row)} |"
                     + "".join(f" {row.get(k) or '–'} |" for k in extra))
    return lines


def metric_rows(card: Card) -> list[dict]:
    """The results rows of a report card: an LLM suite's (``llm_rows``), else every set and the pooled
    challenge accuracy with their bootstrap intervals and the paired interval of the change; then
    held-out perplexity (n: the tokens scored)."""
    if card.llm:
        return llm_rows(card) + _perplexity_rows(card)
    metric, intervals, estimates = card.task.metric, card.intervals, set_estimates(card)
    paired = (intervals.delta if intervals else None) or {}
    rows = [_row(name, entry.base["n"], metric, estimates[name], (paired.get("sets") or {}).get(name))
            for name, entry in card.sets.items()]
    challenge = challenge_estimates(card)
    if challenge:
        pooled = (intervals.challenge if intervals else None) or {}
        rows.append(_row("challenge pooled (" + " + ".join(card.challenge.sets) + ")",
                         pooled["base"].n if pooled.get("base") else None, metric, challenge, paired.get("challenge")))
    return rows + _perplexity_rows(card)


def _row(name: str, n, metric: str, scores: dict, delta: dict | None = None, **extra) -> dict:
    """One row; ``scores`` {role: estimate} of the two models (``headline.estimate``: an LLM task's scores as they
    are), ``delta`` the change's paired interval."""
    row = {"set": name, "n": n, "metric": metric, **{role: scores[role]["value"] for role in ROLES}}
    for role in ROLES:
        if scores[role].get("low") is not None:
            row[f"{role}_interval"] = [scores[role]["low"], scores[role]["high"]]
    if (delta or {}).get("low") is not None:
        row["delta_interval"] = [delta["low"], delta["high"]]
    return {**row, **{key: value for key, value in extra.items() if value}}


def llm_rows(card: Card) -> list[dict]:
    """Per lm-eval task of the card's ``llm`` section: its metric for both models with their intervals,
    the paired interval of the change, flips and KL, flagged when the base is at chance; rolling tasks:
    word perplexity; then the mean of the tasks above chance with the pooled flips and KL."""
    llm, rows = card.llm, []
    for name, t in llm.tasks.items():
        if t["output_type"] == "multiple_choice":
            score, f = t[t["metric"]], t["flips"]
            rows.append(_row(name, t["n"], t["metric"], score, score["delta"],
                             flips=f"{f['correct_to_wrong']} / {f['wrong_to_correct']}", kl=estimate_text(t["kl"], 1, ".3f"),
                             note="base at chance: out of the mean" if t["near_chance"] else None))
        elif "word_perplexity" in t:
            w = t["word_perplexity"]
            rows.append(_row(name, t["n"], "word_perplexity", {role: estimate(w[role]) for role in ROLES},
                             note="lower is better; n: documents"))
        elif "score" in t:
            rows.append(_row(name, t["n"], t["metric"], t["score"], t["score"]["delta"]))
    head, pooled = llm.headline, llm.pooled
    if head and pooled:
        f = pooled["flips"]
        rows.append(_row(f"mean of the {len(llm.headline_tasks)} tasks above chance", pooled["accuracy"]["base"]["n"],
                         "mean accuracy", head, head["delta"], flips=f"{f['correct_to_wrong']} / {f['wrong_to_correct']}",
                         kl=estimate_text(pooled["kl"], 1, ".3f"),
                         note="each task's metric (acc_norm where it has one); flips and KL pooled"))
    return rows


def _perplexity_rows(card: Card) -> list[dict]:
    """Held-out perplexity of both models; n: the tokens scored (predicted), not the file's tokens."""
    lm = card.language_model
    if not lm:
        return []
    b = lm.base
    scored = b.get("scored", b.get("tokens"))
    return [_row(f"perplexity: {Path(str(b.get('file') or 'held-out text')).name}", scored, "perplexity",
                 {role: estimate(getattr(lm, role)["perplexity"]) for role in ROLES},
                 note="lower is better; n: the tokens scored")]


def size_summary(card: Card) -> dict:
    """Parameters, bytes on disk against the file the user started from and its float32 folder, and
    bits per weight of what is stored (``metrics/size.stored_bits``); F_bias when the task has one."""
    params = card.params
    size = {"parameters_base": params.base["total"], "parameters_compressed": params.compressed["total"],
            "parameter_ratio": params.ratio}
    disk, start, fp32 = params.compressed.get("disk_bytes"), params.base.get("started_from"), \
        params.base.get("disk_bytes")
    if disk:
        size["on disk (this folder)"] = mb(disk)
        if start:
            size[f"on disk: {start['what']}"] = f"{mb(start['bytes'])} ({disk / start['bytes']:.2f}× of it here)"
        if fp32 and (not start or fp32 != start["bytes"]):
            size["on disk: the base's float32 folder"] = f"{mb(fp32)} ({disk / fp32:.2f}× of it here)"
    stored = params.stored or {}
    if (stored.get("quantized") or {}).get("bits_per_weight"):
        q = stored["quantized"]
        size["bits per weight in the quantized layers"] = f"{q['bits_per_weight']:.3f} ({quantized_layer_count(card)} layers)"
    if (stored.get("overall") or {}).get("bits_per_parameter"):
        size["bits per parameter stored (whole file)"] = f"{stored['overall']['bits_per_parameter']:.2f}"
    bias, f_bias = card.bias, card.intervals.f_bias if card.intervals else None
    if bias is not None and bias.f_bias is not None:
        size["F_bias (Du et al. 2023 eq. 1)"] = (f"{bias.f_bias:.3f}" + ("" if bias.meaningful else " (not meaningful)")
                                                 + span_text(f_bias, 1, ".3f"))
    return size


def speed_summary(card: Card) -> dict:
    """Every speedup with its interval (``headline.speedup_text``: "not measurable" when it includes 1),
    or why the speed was not timed."""
    speed = card.speed
    if not speed.timed:
        return {"timed": "no", "why": speed.why_not_timed, **served_summary(speed.served)}
    out = {"mode": speed.mode, **({"engine": speed.engine} if speed.engine else {}),
           "device": speed.device, "threads": speed.threads}
    timing = speed.timing or {}
    if not timing:  # a card without raw times: the bare ratios
        out.update({"latency speedup": speedup_text(speed.latency_ms["speedup"], None, speed.meaningful),
                    "throughput speedup": speedup_text(speed.throughput_per_s["speedup"], None, speed.meaningful)})
    for part, entry in timing.items():
        out[f"{part} speedup [95% interval]"] = speedup_text(None, entry["speedup"], speed.meaningful)
    load = speed.load_average
    if load:
        out["load average (1 min) before / after"] = f"{load['before'][0]:.1f} / {load['after'][0]:.1f}"
    return {**out, **served_summary(speed.served)}


def served_summary(served: dict | None) -> dict:
    """The served speed in vLLM (``serving/speed.py``): each row's speedup with its interval and the
    engine, or why it was not measured; nothing when the run did not ask (``--speed none``, not an LLM)."""
    if not served:
        return {}
    if not served.get("measured"):
        return {"served in vLLM": f"not measured: {served['why']}"}
    out = {"served in vLLM": f"{served['engine']}, dtype {served['dtype']}"}
    for row in served["rows"]:
        out[f"served {row['measure']}: speedup [95% interval]"] = speedup_text(None, row["speedup"])
    return out


def provenance_line(card: Card) -> str | None:
    p = card.provenance
    if not p:
        return None
    return (f"{p.get('model', 'the base')} from `{Path(str(p.get('source_file', '?'))).name}` (sha256 "
            f"{str(p.get('source_sha256', '?'))[:12]}…): {p.get('note', '')}")


def served_note(card: Card) -> str:
    """Whether this card's folder was served in vLLM (``speed.served``, ``serving/speed.py``), and where to look."""
    served = card.speed.served
    if served and served.get("measured"):
        return f"served here by {served['engine']}: Speed, Served in vLLM"
    if served:
        return f"not served here: {served['why']}"
    return "check a folder with `forgetless serve-check`"


def deployment_notes(card: Card) -> list[str]:
    """What a user gets from each method of the chain, and where (issue 30: structural removal is
    measured here; zeros give no speedup on CPU nor in current vLLM; int4 compressed-tensors saves disk
    and GPU memory, with vLLM's GPU kernels; dynamic int8 / bf16 as the quantize method judged)."""
    notes = []
    for method in card.method.chain():
        name, config = method.name, method.config
        fmt = QuantFormat.from_config(config)
        if method.structured:
            measured = ("the speed measured here (Speed) is what a CPU gets" if card.speed.timed
                        else "its speed was not timed in this run (--speed)")
            notes.append(f"{method_label(name, config)}: layers, heads or widths removed — a dense model with fewer "
                         f"FLOPs on any runtime; {measured}.")
        elif fmt is not None and not fmt.packed:  # W8A8 / FP8
            notes.append(f"{method_label(name, config)} (compressed-tensors {fmt.type} weights, "
                         f"inputs {fmt.activations}): vLLM serves it with its W8A8 int8 / FP8 kernels on GPU "
                         f"({served_note(card)}); in PyTorch on CPU the inputs' and weights' quantize-dequantize runs in "
                         "float32: the same numbers, no speedup.")
        elif "bits" in config and "group_size" in config:  # a weight-only integer grid, saved as compressed-tensors
            notes.append(f"{method_label(name, config)} (compressed-tensors, group size {config.get('group_size')}): "
                         "smaller on disk and in GPU memory; vLLM serves it with its W4A16 / W8A16 (Marlin) kernels on "
                         f"GPU (group sizes 32, 64, 128 or -1; {served_note(card)}); transformers on CPU "
                         "dequantizes it to float32: no speedup there.")
        elif "dtype" in config:  # PyTorch kernels: dynamic int8 or bf16
            q = next((q for q in card.deployment.quantization if q.get("dtype") == config.get("dtype")), {})
            notes.append(f"{method_label(name, config)}: PyTorch kernels on CPU; speedup "
                         f"{'expected' if q.get('expected') else 'not expected'} ({q.get('why', 'see the report')}).")
        else:
            notes.append(f"{method_label(name, config)}: zeros stored dense (unstructured or N:M) — no speedup on CPU "
                         "and none in current vLLM (its 2:4 sparse kernels were removed; compressed-tensors' sparse "
                         "formats are legacy); the file is no smaller unless another method packs it.")
    return notes
