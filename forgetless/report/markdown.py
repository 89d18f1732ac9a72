"""Markdown rendering of a report card (see ``card.py`` for the schema)."""
from __future__ import annotations

from ..data.task_kinds import task_kind
from .inert import inert
from .headline import (challenge_estimates, estimate_text, hard_easy_estimates, megabytes as mb, num, pct,
                       set_estimates, size_numbers, span_text, speedup, speedup_text, verdict)
from .size_speed_markdown import size_markdown, speed_markdown
from .layers import layers_markdown
from .sections import method_sections
from .llm_markdown import llm_markdown
from .naming import card_title, quantizes, zeroes_weights
from .card_types import Card


def delta(a, b) -> str:
    return "–" if a is None or b is None else f"{100 * (b - a):+.1f}"


GENERATION_METRICS = ("rougeL", "rouge1", "rouge2", "meteor")


def render_markdown(card: Card, summary: bool = True) -> str:
    """The card as Markdown. ``summary`` False leaves out the warnings and the verdict (``report.html``
    shows them in its summary panel, ``report/summary.py``). The first plot (``metrics.png``, the
    accuracies with their intervals) follows the table it shows; method plots come last."""
    lines = [f"# forgetless report card: {card_title(card)}", ""]
    if summary:
        if card.warnings:
            lines += ["## ⚠ Warnings", "", *[f"- {w}" for w in card.warnings], ""]
        lines += [f"**Verdict:** {verdict(card)}.", "", _verdict(card), ""]
    plots = card.plots or []
    shown = ["", *[f"![{p}]({p})" for p in plots[:1]]]  # beside the table whose numbers it shows
    if task_kind(card.kind.task).labelled:
        lines += _classification(card, shown)
    elif card.llm is not None:  # an LLM suite (report/llm_markdown.py): its perplexity too
        lines += llm_markdown(card, shown)
    else:
        lines += _generation(card) + shown
    zs = card.zero_shot
    if zs and "label_words" in zs:
        words = " / ".join(zs["label_words"])
        lines += ["", "## Zero-shot prompt", "",
                  f"{zs['template']} template; instruction: \"{zs['instruction']}\"; text: `{zs['body']!r}`; label "
                  f"words {words} (label order); {zs['shots']} shot(s) (seed {zs['shot_seed']}); label score "
                  f"{zs['label_score']} of token log-probabilities; calibration {zs['score_calibration']}"
                  + (f" (content-free inputs {zs['content_free_inputs']})" if zs.get("content_free_inputs") else "")
                  + f"; prompts cut to their last {zs['max_length']} tokens: "
                  + ", ".join(f"{role} {sum(t.values())}" for role, t in zs["truncated_prompts"].items()) + "."]
    lm = card.language_model
    if lm and card.llm is None:  # an LLM suite's perplexity is in its own section (llm_markdown.py)
        b, c = lm.base, lm.compressed
        how = (f"{b['tokens']} tokens, {b['windows']} non-overlapping windows of {b['window']} tokens (the SparseGPT / "
               "Wanda protocol)" if "window" in b else f"{b['tokens']} tokens, 128-token windows per text (an older "
               "protocol, not comparable with papers)")
        lines += ["", f"## Language modelling: held-out perplexity on {b['file']} ({b.get('texts', '?')} texts joined; "
                      f"{how})", "",
                  f"base {b['perplexity']:.2f}, compressed {c['perplexity']:.2f} "
                  f"({c['perplexity'] / b['perplexity']:.2f}×; lower is better)."]
    if card.provenance:  # a converted base (offline_models.py)
        p = card.provenance
        lines += ["", f"Base provenance: {p['model']} from `{p['source_file']}` (sha256 {p['source_sha256']}); "
                      f"{p['note']}."]
    lines += _training(card) + size_markdown(card) + speed_markdown(card)
    lines += _deployment(card)
    lines += layers_markdown(card)
    sections = method_sections(card)
    lines += sections.sensitivity.markdown() if sections.sensitivity else []
    lines += sections.budget.markdown(card.plots or []) if sections.budget else []
    lines += _robustness(card)
    lines += calibration_markdown(card)
    if card.notes:
        lines += ["", "## Notes", ""] + [f"- {note}" for note in card.notes]
    env = card.environment
    lines += ["", "## Reproducibility", "",
              f"- protocol: {card.task.protocol}",
              f"- task kind {card.kind.task}, model kind {card.kind.model}; method config "
              + "; then ".join(f"{m.name}: `{m.config}`" for m in card.method.chain())
              + f"; objective `{card.method.objective}`; "
              f"student init: {card.method.student_init}",
              f"- seed {card.seed}; command: `{card.command}`",
              f"- versions: {', '.join(f'{k} {v}' for k, v in env.versions.items() if v)}",
              f"- hardware: {env.hardware['processor']}, {env.hardware['cpu_count']} CPUs, "
              f"{env.hardware['torch_threads']} torch threads, GPU: {env.hardware['gpu'] or 'none'}"
              + (f"; ran on {env.hardware['device']}" if env.hardware.get('device') else ""),
              f"- created {env.created}"]
    memory = env.compress_memory
    if memory:  # metrics/memory.py: the compression step's own high-water mark
        lines.insert(len(lines) - 1, f"- compression step's peak memory: {memory['peak_rss_mib']:.0f} MiB resident "
                     f"({memory['added_mib']:+.0f} MiB above its start"
                     + ("" if memory["since_start_of_step"] else "; process peak, not reset at the step")
                     + (f"; GPU {memory['cuda_peak_mib']:.0f} MiB" if "cuda_peak_mib" in memory else "") + ")")
    if env.run_memory:  # metrics/memory.run_peak: the whole run, evaluation included
        lines.insert(len(lines) - 1, f"- the run's peak memory: {env.run_memory['peak_rss_mib']:.0f} MiB resident")
    if plots[1:]:
        lines += ["", "## Method plots", ""] + [f"![{p}]({p})" for p in plots[1:]]
    return inert("\n".join(lines) + "\n")  # names from users' data stay text on GitHub too (report/inert.py)


def _generation(card: Card) -> list[str]:
    lines = ["## Generation quality (%, best reference per example)", "",
             "| set | n | metric | base | compressed | Δ |", "|---|---:|---|---:|---:|---:|"]
    for name, entry in card.sets.items():
        for metric in GENERATION_METRICS:
            b, c = entry.base.get(metric), entry.compressed.get(metric)
            if b is None and c is None:
                continue
            d = "–" if b is None or c is None else f"{c - b:+.2f}"
            lines.append(f"| {name} | {entry.base['n']} | {metric} | {num(b)} | {num(c)} | {d} |")
        share = (entry.base.get("distinct_predictions"), entry.compressed.get("distinct_predictions"))
        lines.append(f"| {name} | | distinct outputs | {pct(share[0])}% | {pct(share[1])}% | |")
    stages = {m.get("meteor_stages") for e in card.sets.values() for m in (e.base, e.compressed)} - {None}
    if stages:
        lines += ["", f"METEOR matching stages: {', '.join(sorted(stages))}."]
    examples = card.sets["dev"].compressed.get("examples") or []
    if examples:
        lines += ["", "Compressed model, first dev examples: " +
                  "; ".join(f"“{e['prediction']}” (reference “{e['reference']}”)" for e in examples)]
    return lines


def _classification(card: Card, plot: list[str]) -> list[str]:
    iv = card.intervals
    lines = ["## Accuracy (%, with [95% bootstrap interval])", "", "| set | n | base | compressed | Δ pts |",
             "|---|---:|---:|---:|---:|"]
    estimates = set_estimates(card)
    for name, entry in card.sets.items():
        lines.append(f"| {name} | {entry.base['n']} | {_accuracy_cells(estimates[name])} |")
    ch = card.challenge
    if ch.base is not None:
        ci = (iv.challenge if iv else None) or {}
        lines.append(f"| challenge pooled ({' + '.join(ch.sets)}) | {ci['base'].n if ci.get('base') else ''} | "
                     f"{_accuracy_cells(challenge_estimates(card))} |")
    if iv and iv.n_resamples:
        lines += ["", f"Intervals: {iv.method}, {iv.n_resamples} resamples of the examples, seed {iv.seed}; "
                      "per-example predictions in predictions.jsonl."]
    lines += plot
    bias = card.bias
    if bias.undefined:
        lines += ["", "## Relative bias (Du et al. 2023, eq. 1)", "", f"F_bias: {bias.undefined}."]
    if bias.f_bias is not None or bias.gap_base is not None:
        fb = f_bias_text(card)
        lines += ["", "## Relative bias (Du et al. 2023, eq. 1)", "",
                  f"gap = (acc_dev − acc_challenge) / acc_dev: base {bias.gap_base:.3f}, "
                  f"compressed {bias.gap_compressed:.3f}; F_bias = gap_compressed / gap_base = {fb} "
                  "(> 1: the compressed model leans more on shortcuts than the base model)."]
    if card.hard_easy.base:
        hb, hc = card.hard_easy.base, card.hard_easy.compressed
        he = hard_easy_estimates(card)
        lines += ["", f"## Hard vs easy on dev (n hard = {hb['n_hard']}, n easy = {hb['n_easy']})", "",
                  "| | base | compressed | Δ pts |", "|---|---:|---:|---:|",
                  *(f"| {p} | {_accuracy_cells(he[p])} |" for p in ("hard", "easy")),
                  f"| easy − hard gap | {pct(hb['gap'])} | {pct(hc['gap'])} | |"]
    lines += _groups(card)
    return lines


def _verdict(card: Card) -> str:
    head = card.headline
    params = card.params
    size = size_numbers(card) if quantizes(card) else {"ratio": params.ratio, "what": "the base parameters"}
    text = f"Size: {size['ratio']:.2f}× {size['what']}"
    if zeroes_weights(card) and not quantizes(card):
        text += f" ({params.nonzero_ratio:.2f}× non-zero)"
    start, disk = params.base.get("started_from"), params.compressed.get("disk_bytes")
    if start and disk:
        ratio = disk / start["bytes"]
        text += (f", on disk {ratio:.2f}× the size of {start['what']}: {mb(start['bytes'])} → {mb(disk)}"
                 + (", larger than the file you started from" if ratio > 1 else ""))
    sp = speedup(card)
    if not sp["timed"]:
        text += f"; {sp['why']}"
    elif not sp["meaningful"] or not sp["measurable"]:
        text += f", no measurable speedup ({sp['what']} {speedup_text(sp['value'], sp, sp['meaningful'])})"
    else:
        text += f", {sp['what']} speedup {speedup_text(sp['value'], sp)}"
    where = (f"the mean {head.metric} of the {len(card.llm.headline_tasks)} LLM tasks above chance"
             if card.llm else f"dev {head.metric}")
    text += f". Keeps {pct(head.kept)}% of {where}"
    ch = card.challenge
    if ch and ch.base:
        text += f" and {pct(ch.compressed / ch.base)}% of challenge accuracy"
    if card.bias and card.bias.f_bias is not None:
        text += f"; F_bias {f_bias_text(card, bold=False, digits=2)}"
    if card.warnings:
        text += f" ({len(card.warnings)} warning{'s' if len(card.warnings) > 1 else ''} above)"
    return text + "."


def _accuracy_cells(pair: dict[str, dict]) -> str:
    """``81.0 [75.5, 86.0] | 78.5 [72.5, 84.0] | -2.5``: both accuracies (%) with their bootstrap intervals
    (``{role: estimate}``; none for n = 0), then the change in points."""
    base, compressed = pair["base"], pair["compressed"]
    return f"{estimate_text(base)} | {estimate_text(compressed)} | {delta(base['value'], compressed['value'])}"


def f_bias_text(card: Card, bold: bool = True, digits: int = 3) -> str:
    """F_bias for the verdict and the bias section: bold only when meaningful, with its interval."""
    bias = card.bias
    if bias.f_bias is None:
        return "undefined (base gap is 0)"
    value = f"{bias.f_bias:.{digits}f}"
    span = span_text(card.intervals.f_bias if card.intervals else None, 1, f".{digits}f")
    if bias.meaningful is False:
        return f"{value}{span} — not meaningful (see warnings)"
    return (f"**{value}**" if bold else value) + span


def _training(card: Card) -> list[str]:
    t = card.training
    if not t:
        return []
    epochs = lambda x: f"{x:g} epoch" + ("" if x == 1 else "s")  # noqa: E731
    base = "unknown (teacher given)" if t.base_epochs is None else epochs(t.base_epochs)
    start = "the fine-tuned teacher" if t.student_init == "teacher" else "the pretrained model"
    if t.base == "as-is":
        base, start = "none (the pretrained model as it is)", "the base (the pretrained model as it is)"
    runs = ", ".join(f"{r['name']} {epochs(r['epochs'])}" for r in t.fine_tunes) or "none"
    total = "" if t.compressed_epochs is None else f" ({epochs(t.compressed_epochs)} in all)"
    return ["", "## Training", "", f"Base: {base}. Compressed: starts from {start}, then fine-tuning runs "
            f"after / during compression: {runs}{total}."]


def _groups(card: Card) -> list[str]:
    out = []
    for name, entry in card.sets.items():
        groups_b, groups_c = entry.base.get("groups"), entry.compressed.get("groups")
        if not groups_b or name == "dev" and len(groups_b) > 20:
            continue
        labels = list(entry.base["per_label"])
        out += ["", f"## {name} by group (%; per gold label: base → compressed)", "",
                "| group | n | base | compressed | " + " | ".join(labels) + " |",
                "|---|---:|---:|---:|" + "---|" * len(labels)]
        for g, b in groups_b.items():
            c = groups_c[g]
            per = " | ".join(f"{pct(b.get(l))} → {pct(c.get(l))}" if l in b else "–" for l in labels)
            out.append(f"| {g} | {b['n']} | {pct(b['accuracy'])} | {pct(c['accuracy'])} | {per} |")
    return out


def _deployment(card: Card) -> list[str]:
    """Runtime, quantization and prediction agreement with the fp32 base (``metrics/runtime.py``)."""
    dep = card.deployment
    if dep.runtime == "torch" and not dep.quantization:
        return []
    agree = dep.agreement
    lines = ["", "## Deployment: runtime and quantization", "",
             f"Compressed model run under **{dep.runtime}**; base under {dep.base_runtime}. Prediction "
             f"agreement with the base: {pct(agree.pooled)}% of {agree.n} examples ("
             + ", ".join(f"{name} {pct(share)}%" for name, share in agree.sets.items()) + ")."]
    for q in dep.quantization:
        lines.append(f"- quantize {q['dtype']}: speedup {'expected' if q.get('expected') else 'not expected'} "
                     f"({q.get('why', '')})")
    return lines


def _robustness(card: Card) -> list[str]:
    clever = (card.robustness or {}).get("clever")
    if not clever:
        return []
    b, c = clever["base"], clever["compressed"]
    p = b["params"]
    rows = [("mean CLEVER score", "mean"), ("median", "median"), ("mean over correctly classified", "mean_correct"),
            ("mean, uncapped ratio", "mean_uncapped")]
    lines = ["", "## Robustness: CLEVER estimates (Weng et al. 2018)", "",
             "| | base | compressed | ratio |", "|---|---:|---:|---:|"]
    for label, key in rows:
        ratio = f"{c[key] / b[key]:.2f}" if b[key] else "–"
        lines.append(f"| {label} | {b[key]:.4g} | {c[key]:.4g} | {ratio} |")
    lines.append(f"| correctly classified | {b['correct']}/{b['examples']} | {c['correct']}/{c['examples']} | |")
    if "fallbacks" in b and "fallbacks" in c:  # cards written before the count have none
        lines.append(f"| fallback Weibull fits (best-KS fit diverged) | {b['fallbacks']}/{b['examples']} | "
                     f"{c['fallbacks']}/{c['examples']} | |")
        lines.append(f"| mean CLEVER score without those examples | {num(b['mean_without_fallbacks'], '.4g')} | "
                     f"{num(c['mean_without_fallbacks'], '.4g')} | |")
    lines += ["", f"Fixed seeded subset of {p['examples']} {b['set']} examples; {p['batches']} batches × "
              f"{p['samples']} samples in an ℓ{p['norm']} ball of radius {p['radius']} around the input embeddings; "
              f"reverse-Weibull location as Lipschitz estimate; scores capped at R. Time: base {b['seconds']:.0f} s, "
              f"compressed {c['seconds']:.0f} s."]
    return lines


def calibration_markdown(card: Card) -> list[str]:
    """A small Markdown table for the report: ECE and confidence − accuracy, base vs compressed."""
    section = card.calibration
    if not section:
        return []
    lines = ["", "## Calibration (Du et al. Observation 2)", "",
             f"Expected calibration error ({section.bins} bins) and mean confidence − accuracy "
             "(> 0: overconfident), in points.", "",
             "| set | part | n | ECE base | ECE compressed | overconf. base | overconf. compressed |", "|---|---|---|---|---|---|---|"]
    for name, roles in section.sets.items():
        base, comp = roles.get("base", {}), roles.get("compressed", {})
        for part in ("all", "easy", "hard"):
            b, c = (base, comp) if part == "all" else (base.get(part), comp.get(part))
            if not b or not c:
                continue
            lines.append(f"| {name} | {part} | {b['n']} | {pct(b['ece'])} | {pct(c['ece'])} | "
                         f"{pct(b['overconfidence'])} | {pct(c['overconfidence'])} |")
    return lines
