"""The report card: what compression cost, in one JSON document and its Markdown rendering, for
every kind of task and model. ``build_card`` is the one place a card is assembled, from one
``Measurements`` object (``report/measurements.py``); ``write_card`` only adds the names of the
files it writes beside it. ``validate_card`` checks a card against the schema below.

JSON schema ``forgetless-report-2`` (fractions in [0, 1] for accuracies; ROUGE / METEOR in %)::

    schema, kind {task: classification|generation|lm-eval, model: classifier|seq2seq|causal-lm}
    task {name, protocol, metric, pooled_challenges, sizes {train, <set>: n}}
    method {name, config, structured, quantizes, objective, objective_options, student_init, train,
            then [{name, config, structured, quantizes}],  # methods applied after it (--then)
            sections {name: {...}},                        # what each method reports (report_section():
                                                           #   sparsity of one-shot pruning, quantization …)
            layers [{method, stack, linears, error {kind, min, median, max} | null,   # report/layers.py:
                     nm {groups, exactly_n, fewer_than_n, fewer_base_zero, more_than_n} | null}]}  # one-shot
    model {compressed, model_type}                          # what the compressed model started from
    headline {metric, base, compressed, kept}           # the task's metric on dev; kept = compressed / base
                                                        # lm-eval: the mean accuracy of llm.headline_tasks
    sets {set: {base: metrics, compressed: metrics}}    # classification: accuracy, n, hard/easy, groups …
                                                        # generation: rouge1/2/L, meteor, n, distinct share …
                                                        # lm-eval: per task n, metric, accuracy (= that metric),
                                                        #   acc, acc_norm; rolling: word/byte perplexity
    challenge {sets, base, compressed}                  # classification: pooled challenge accuracy, else null
    bias {gap_base, gap_compressed, f_bias, meaningful} # Du et al. eq. 1 (classification), else null;
                                                        # meaningful false: base gap <= 0 or base near chance
    hard_easy {base: {hard, easy, n_hard, n_easy, gap} | null, compressed}   # classification, else null
    calibration {bins, sets {set: {base, compressed}}} | null   # ECE, overconfidence (metrics/calibration.py);
                                                        # null: generation, or no probabilities (seq2seq)
    params {base: {total, nonzero, .., disk_bytes, source,   # disk_bytes: the float32 folder the run read
                   started_from {path, bytes, what} | null},  # the user's own file (smollm2: the Q4_1 GGUF)
            compressed: {.., disk_bytes, path}, ratio, nonzero_ratio,
            stored {quantized {layers, weights, bytes, bits_per_weight}, overall {parameters, bytes,
                    bits_per_parameter}, file_bytes, disk_bytes} | null}   # metrics/size.stored_bits of the
                                                                          # saved folder (null before saving)
    speed {timed: false, setting: auto|none,            # --speed; not timed: only why_not_timed (one
           why_not_timed, runtime, meaningful}          #   sentence, metrics/speed.untimed_reason), no figures
    speed {timed: true, setting, load_average {before, after: [1, 5, 15 min]},   # os.getloadavg around the timing
           mode: forward|generate|prefill+decode, latency_ms, throughput_per_s, config, threads, device,
           meaningful, runtime,                         # meaningful: the dense computation changed
           times_s {latency|throughput: {base: [s], compressed: [s]}},      # raw per-repeat times
           timing {latency|throughput: {base|compressed: {median, q1, q3, iqr, n},
                                        speedup: {speedup, low, high, measurable, n_resamples}},
                   decode latency|throughput: {speedup: {.., unbounded}}},   # causal-lm: per-token decode
           [decode_ms_per_token, decode_ms_per_token_batch, flop_limit]}   # causal-lm only
    deployment {runtime, base_runtime, quantization [{dtype, expected, why}],
                agreement {sets {set: share}, pooled, n}}  # compressed (as deployed) vs base predictions
    intervals {method, confidence, n_resamples, seed,   # percentile bootstrap, seeded (report/honest.py)
               sets {set: {role: {accuracy, low, high, n}}},  # n = 0: accuracy / low / high null
               hard_easy {role: {hard, easy}} | null, challenge {role} | null,
               f_bias {f_bias, low, high, base_gap, compressed_gap, base_gap_nonpositive_share,
                       n_dev, n_challenge, n_resamples} | null,   # paired bootstrap, Du et al. eq. 1
               delta {sets {set: {value, low, high, n}}, challenge {..} | null} | null} | null
                                                        # compressed − base, paired (classification)
    training {base_epochs, student_init, fine_tunes [{name, epochs}], compressed_extra_epochs,
              compressed_epochs, base: fine-tune|as-is}  # epochs each model saw (null: teacher given)
    warnings [sentence, ..]                             # report/trust.py checks that fired
    zero_shot {template, instruction, body, label_words, shots, .., truncated_prompts {role: {set: n}}}
                                                        # causal-lm only: how both models were prompted
    language_model {base|compressed: {file, [texts], perplexity, nll, window, windows, windows_total, tokens,
                                      scored, dropped}}   # causal-lm with a text file; lm-eval: WikiText-2 test
    llm {engine {engine, version, shots, chat_template, window, batch_size, ..},   # lm-eval only (report/llm_section)
         tasks {task: {output_type, metric, n, size, source,
                       multiple choice: chance, near_chance, in_headline, acc / acc_norm {base, compressed, delta:
                         {value, low, high, n}}, flips {n, correct_to_wrong, wrong_to_correct, flip_rate, mcnemar_p},
                         kl {value, low, high, n}, margin {base, compressed},
                         hard_easy {hard|medium|easy: {n, margin_range, accuracy, flips, kl}};
                       rolling: word_perplexity / byte_perplexity / bits_per_byte {base, compressed, ratio}}},
         headline_tasks [task], headline {base, compressed, delta} | null,   # mean over tasks above chance
         kl_basis sentence,                                 # what KL is computed on (raw log-likelihoods)
         pooled {tasks, accuracy, flips, kl} | null, pairs [{easier, harder, delta_*, difference, meaningful}]}
    robustness {clever {base, compressed}}              # optional (CLEVER)
    provenance {...}                                    # optional: a converted base (--model smollm2)
    recipe {...}                                        # optional: the resolved recipe of the run
    notes [..], run {resolved run configuration}, environment {versions, hardware, created,
      compress_memory {peak_rss_mib, start_rss_mib, added_mib, since_start_of_step, [cuda_peak_mib]} | null,
      run_memory {peak_rss_mib} | null}, seed, command    # run_memory: the whole run's peak resident set
    llm.scoring {path: shared-context|lm-eval, tolerance_nats_per_token, near_ties {task: {role: {acc, acc_norm}}}}  # llm/card.py
    llm.stopping {rule, method, confidence, target_points, interval, width_points, reached, items_per_task, ..}
    predictions "predictions.jsonl", plots [file names]  # added by write_card (files beside the card)
"""
from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path

from ..metrics.bias import f_bias, relative_gap
from ..metrics.memory import run_peak
from ..fsutil import atomic_write_json, atomic_write_text
from . import honest
from .environment import environment
from .html import render_html
from ..config import MODEL_KINDS
from ..tree import to_recipe
from .measurements import Measurements
from .naming import card_title
from .layers import layer_summary
from .markdown import render_markdown
from .plots import accuracy_plot
from .summary import summary_panel
from .predictions import write_predictions
from .llm_section import llm_section

SCHEMA = "forgetless-report-2"
SECTIONS = ("schema", "kind", "task", "method", "model", "headline", "sets", "challenge", "bias", "hard_easy",
            "calibration", "params", "speed", "deployment", "intervals", "training", "warnings", "notes", "run", "seed",
            "command", "environment")
PREDICTIONS_FILE = "predictions.jsonl"


def comparison(task, results: dict, predictions: dict | None, seed: int = 0, calibration: dict | None = None,
               agreement: dict | None = None, training: dict | None = None) -> dict:
    """The paired comparison of two models (roles ``base`` and ``compressed``) on every set of
    ``task``: the card's ``kind.task``, ``task``, ``headline``, ``sets``, ``challenge``, ``bias``,
    ``hard_easy``, ``calibration``, ``intervals``, ``agreement`` and ``warnings`` (schema above).
    ``results``: each role's evaluation (``kind.evaluate`` without predictions); with per-example
    ``predictions`` the comparison gets intervals and warnings. ``forgetless.evaluate(model, data,
    base=)`` returns it; ``build_card`` puts it in the card."""
    sets = {name: {"base": results["base"]["sets"][name], "compressed": results["compressed"]["sets"][name]}
            for name in results["base"]["sets"]}
    labelled = task.kind == "classification"
    metric = "accuracy" if labelled else task.metric
    llm = llm_section(task, results, predictions, seed) if task.kind == "lm-eval" else None
    if llm is not None:  # an LLM suite: the mean accuracy over the tasks above chance
        base_dev, comp_dev = ((llm["headline"] or {}).get(role, {}).get("value") for role in ("base", "compressed"))
    else:
        base_dev, comp_dev = sets["dev"]["base"].get(metric), sets["dev"]["compressed"].get(metric)
    bias = bias_section(results) if labelled else None
    warnings = honest.collect(task, results, predictions, bias, training) if predictions else []
    if bias is not None:
        bias["meaningful"] = honest.f_bias_meaningful(bias, warnings)
    compared = {
        "task": {"name": task.name, "protocol": task.protocol, "metric": metric,
                 "pooled_challenges": task.pooled if labelled else [],
                 "sizes": {"train": len(task.train), **{k: v["base"]["n"] for k, v in sets.items()}}},
        "headline": {"metric": metric, "base": base_dev, "compressed": comp_dev,
                     "kept": comp_dev / base_dev if base_dev else None},
        "sets": sets,
        "challenge": {"sets": task.pooled, "base": results["base"]["challenge_pooled"],
                      "compressed": results["compressed"]["challenge_pooled"]} if labelled else None,
        "bias": bias,
        "hard_easy": {role: _hard_easy(results[role]["sets"]["dev"]) for role in ("base", "compressed")}
        if labelled else None,
        "calibration": calibration,
        "intervals": honest.intervals_section(task, predictions, seed) if predictions else None,
        "agreement": agreement,
        "warnings": warnings,
    }
    if llm is not None:
        compared["llm"] = llm
    if "zero_shot" in results["base"]:  # causal-lm: the prompt and scoring both models were evaluated with
        compared["zero_shot"] = {**results["base"]["zero_shot"], "truncated_prompts": {
            role: results[role]["zero_shot"]["truncated_prompts"] for role in ("base", "compressed")}}
    if "language_model" in results["base"]:  # causal-lm: held-out perplexity of both models
        compared["language_model"] = {role: results[role]["language_model"] for role in ("base", "compressed")}
    return compared


def build_card(measured: Measurements) -> dict:
    """The card (schema above) of one run, from everything it measured: the paired comparison of
    base and compressed (``comparison``), the method, sizes, speed, training and provenance."""
    from ..metrics.size import stored_size  # torch: not imported to re-render a saved card

    run, method = measured.run, measured.method
    compared = comparison(measured.task, measured.results, measured.predictions, run.seed, measured.calibration,
                          measured.agreement, measured.training)
    sizes = measured.sizes
    leak = honest.run_calibration_leak(measured.task, run, [method, *measured.then], measured.kind.name,
                                       measured.calibration_texts)
    card = {
        "schema": SCHEMA,
        "kind": {"task": measured.task.kind, "model": measured.kind.name},
        "task": compared["task"],
        "method": {**method.describe(), "structured": method.config.structured, "quantizes": method.config.quantizes,
                   "objective": measured.objective.config.name, "objective_options": asdict(run.objective),
                   "student_init": run.student_init, "train": asdict(run.train),
                   "then": [{**m.describe(), "structured": m.config.structured, "quantizes": m.config.quantizes}
                            for m in measured.then]},
        "model": measured.model,
        **{key: compared[key] for key in ("headline", "sets", "challenge", "bias", "hard_easy", "calibration")},
        "params": {**sizes, "ratio": sizes["compressed"]["total"] / sizes["base"]["total"],
                   "nonzero_ratio": sizes["compressed"]["nonzero"] / sizes["base"]["nonzero"],
                   "stored": stored_size(sizes["compressed"].get("path"))},
        "speed": {**measured.speed, **({"timing": honest.timing_section(measured.speed, run.seed)}
                                       if measured.speed.get("timed", True) else {})},
        "deployment": None,
        "intervals": compared["intervals"],
        "training": measured.training,
        "warnings": compared["warnings"] + ([leak] if leak else []),
        "notes": list(measured.notes),
        "run": to_recipe(run),
        "seed": run.seed,
        "command": measured.command,
        "environment": {**environment(), "compress_memory": measured.compress_memory,
                        "run_memory": run_peak()},  # the whole run's peak so far: load, compress, evaluate, time
    }
    _deployment(card, measured)
    optional = {"robustness": measured.robustness, "provenance": measured.provenance, "recipe": measured.recipe,
                "llm": compared.get("llm")}
    card.update({key: value for key, value in optional.items() if value})
    card.update({key: compared[key] for key in ("zero_shot", "language_model") if key in compared})
    return card


def _deployment(card: dict, measured: Measurements) -> None:
    """``deployment`` (runtime, quantization, agreement with the fp32 base) and ``speed.runtime``;
    ``speed.meaningful`` (set by the pipeline, ``metrics/speed.unchanged_reason``): a speedup can be
    real when the dense computation changed (layers, heads, widths removed, int8 / bf16 kernels, another
    runtime); quantization records whether it expected one (``methods/quantize.py``)."""
    methods = [measured.method, *measured.then]
    runtime = measured.run.eval.runtime
    sections = [m.report_section() or {} for m in methods]  # each method's own card section (methods/base.py)
    card["method"]["sections"] = {name: value for section in sections for name, value in section.items()}
    card["method"]["layers"] = layer_summary(methods)
    quantized = [section["quantization"] for section in sections if "quantization" in section]
    card["deployment"] = {"runtime": runtime, "base_runtime": "torch (fp32)", "quantization": quantized,
                          "agreement": measured.agreement}
    card["speed"]["runtime"] = runtime
    card["speed"]["meaningful"] = bool(measured.speed["meaningful"])


def validate_card(card: dict) -> None:
    """Raise ``ValueError`` naming the first problem if ``card`` does not follow the schema above."""
    missing = [k for k in SECTIONS if k not in card]
    if missing or card["schema"] != SCHEMA:
        raise ValueError(f"report card: missing sections {missing} or schema {card.get('schema')!r} != {SCHEMA!r}")
    labelled = card["kind"]["task"] == "classification"
    if card["kind"]["model"] not in MODEL_KINDS or card["kind"]["task"] not in ("classification", "generation",
                                                                                "lm-eval"):
        raise ValueError(f"report card: kind {card['kind']} is not a known task type / model kind")
    if (card["kind"]["task"] == "lm-eval") != isinstance(card.get("llm"), dict):
        raise ValueError("report card: the llm section must be present exactly for lm-eval tasks")
    metric = card["task"]["metric"]
    for name, entry in card["sets"].items():
        for role in ("base", "compressed"):
            value = entry[role].get(metric)
            if not isinstance(entry[role].get("n"), int) or (value is not None and not isinstance(value, float)):
                raise ValueError(f"report card: set {name} / {role} lacks n or a numeric {metric}")
    for section in ("challenge", "bias", "hard_easy"):
        if labelled != (card[section] is not None):
            raise ValueError(f"report card: section {section} must be present exactly for classification tasks")
    speed = card["speed"]
    if not speed.get("timed", True):
        if not isinstance(speed.get("why_not_timed"), str) or any(k in speed for k in ("latency_ms", "timing")):
            raise ValueError("report card: a speed not timed must say why (why_not_timed) and hold no figures")
    else:
        for part in ("latency_ms", "throughput_per_s"):
            if not all(isinstance(speed[part][k], float) for k in ("base", "compressed", "speedup")):
                raise ValueError(f"report card: speed.{part} must hold base, compressed and speedup")
    _check_sections(card, labelled)
    if not isinstance(card["warnings"], list) or not all(isinstance(w, str) for w in card["warnings"]):
        raise ValueError("report card: warnings must be a list of sentences")
    intervals = card["intervals"]
    if intervals is not None:
        if not isinstance(intervals.get("n_resamples"), int) or "seed" not in intervals:
            raise ValueError("report card: intervals must record n_resamples and seed")
        for name, entry in intervals["sets"].items():
            for role, interval in entry.items():
                if interval["n"] and not interval["low"] <= interval["accuracy"] <= interval["high"]:
                    raise ValueError(f"report card: interval of {name} / {role} does not contain its accuracy")


def _check_sections(card: dict, labelled: bool) -> None:
    """model, method.then, calibration, speed.runtime / meaningful, deployment, training and the
    causal-lm sections (schema above)."""
    model = card["model"]
    if not isinstance(model, dict) or not isinstance(model.get("compressed"), str):
        raise ValueError("report card: model must name what the compressed model started from")
    if not isinstance(card["method"].get("then"), list):
        raise ValueError("report card: method.then must list the methods applied after the method")
    calibration = card["calibration"]
    if calibration is not None and (not labelled or not isinstance(calibration.get("sets"), dict)):
        raise ValueError("report card: calibration (classification only) must hold bins and sets")
    if not isinstance(card["speed"].get("meaningful"), bool) or not isinstance(card["speed"].get("runtime"), str):
        raise ValueError("report card: speed must record meaningful (bool) and runtime")
    deployment = card["deployment"]
    if not isinstance(deployment, dict) or deployment.get("runtime") != card["speed"]["runtime"] \
            or not isinstance(deployment.get("quantization"), list) or "pooled" not in (deployment.get("agreement") or {}):
        raise ValueError("report card: deployment must hold runtime, quantization and agreement")
    if card["training"] is not None and "compressed_epochs" not in card["training"]:
        raise ValueError("report card: training must record the epochs each model saw")
    causal = card["kind"]["model"] == "causal-lm"
    if causal != ("zero_shot" in card):
        raise ValueError("report card: zero_shot must be present exactly for causal-lm models")
    if "language_model" in card and (not causal or set(card["language_model"]) != {"base", "compressed"}):
        raise ValueError("report card: language_model (causal-lm) must hold base and compressed perplexity")


def bias_section(results: dict) -> dict:
    """gap and F_bias from dev accuracy and the pooled challenge accuracy of both models."""
    base_dev = results["base"]["sets"]["dev"]["accuracy"]
    comp_dev = results["compressed"]["sets"]["dev"]["accuracy"]
    base_adv, comp_adv = results["base"]["challenge_pooled"], results["compressed"]["challenge_pooled"]
    if base_adv is None:
        return {"gap_base": None, "gap_compressed": None, "f_bias": None}
    if base_dev <= 0 or comp_dev <= 0:  # a relative gap needs a positive dev accuracy
        return {"gap_base": None, "gap_compressed": None, "f_bias": None,
                "undefined": "a model has 0% dev accuracy: the relative gap (eq. 1) is undefined"}
    value = f_bias(base_dev, base_adv, comp_dev, comp_adv)
    return {"gap_base": relative_gap(base_dev, base_adv), "gap_compressed": relative_gap(comp_dev, comp_adv),
            "f_bias": None if math.isnan(value) else value}


def _hard_easy(metrics: dict) -> dict | None:
    if "hard" not in metrics:
        return None
    return {"hard": metrics["hard"]["accuracy"], "easy": metrics["easy"]["accuracy"],
            "n_hard": metrics["hard"]["n"], "n_easy": metrics["easy"]["n"], "gap": metrics.get("easy_hard_gap")}


def write_card(card: dict, out_dir: str | Path, extra_plots: list | None = None,
               prediction_rows: list[dict] | None = None) -> dict[str, Path]:
    """Write ``report.json``, ``predictions.jsonl`` when ``prediction_rows`` are given, and the
    pages (:func:`render_card`)."""
    out_dir = Path(out_dir)
    if prediction_rows is not None:
        write_predictions(out_dir / PREDICTIONS_FILE, prediction_rows)
        card["predictions"] = PREDICTIONS_FILE
    paths = render_card(card, out_dir, extra_plots)
    atomic_write_json(out_dir / "report.json", card)
    return {"json": out_dir / "report.json", **paths}


def render_card(card: dict, out_dir: str | Path, extra_plots: list | None = None) -> dict[str, Path]:
    """``metrics.png``, ``report.md`` (which links the plots) and ``report.html`` (one
    self-contained file: the summary panel on top, plots embedded); sets ``card["plots"]``.
    ``forgetless report`` calls this alone to re-render a saved card (``report/rerender.py``)."""
    out_dir = Path(out_dir)
    plots = [accuracy_plot(card, out_dir / "metrics.png")] + [Path(p) for p in (extra_plots or [])]
    card["plots"] = [p.name for p in plots]
    atomic_write_text(out_dir / "report.md", render_markdown(card))
    title = f"forgetless report card: {card_title(card)}"
    page = render_html(render_markdown(card, summary=False), out_dir, title, summary_panel(card))
    atomic_write_text(out_dir / "report.html", page)
    return {"markdown": out_dir / "report.md", "html": out_dir / "report.html"}
