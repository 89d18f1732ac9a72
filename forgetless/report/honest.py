"""What makes a report card trustworthy: per-example predictions beside it, bootstrap intervals on
its numbers, the timing spread, and warnings where a number should not be read at face value.

Built from the per-example ``predictions`` the model kinds return (``kinds/*.evaluate``) and the
aggregate ``results``; no inference happens here. Intervals are percentile bootstraps
(Efron & Tibshirani 1993, ch. 13; ``metrics.intervals``), seeded with the run's seed, with
``DEFAULT_RESAMPLES`` resamples (recorded in the card). The interval of F_bias (Du et al. 2023, eq. 1, in
``metrics.intervals``) resamples base and compressed predictions of the same examples together.
"""
from __future__ import annotations

import numpy as np

from ..bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from ..metrics.intervals import bootstrap_accuracy, bootstrap_f_bias, speedup_interval, timing_summary
from ..llm.records import MULTIPLE_CHOICE, scores
from ..metrics.paired import paired_intervals, softmax
from ..data.task_kinds import task_kind
from . import trust
from .llm_section import ROLES, llm_section, near_chance_warnings
from .card_types import Interval, Intervals


# ----- per-example rows (predictions.jsonl) ----------------------------------------------------
def prediction_rows(task, predictions: dict) -> list[dict]:
    """Rows for ``report/predictions.py``: one per (role, set, example). Classification: gold and
    predicted label names of the set (null for a generated text that names no label), the
    probabilities over the task's labels (classifiers), generated text (seq2seq models); generation
    tasks: ``gold`` the reference texts, ``predicted`` the generated text."""
    own = task_kind(task).hook("prediction_rows")  # a kind's own rows (an LLM suite's: llm_rows)
    if own is not None:
        return own(predictions)
    rows = []
    for role in ROLES:
        for name, examples in task.eval_sets().items():
            entry = predictions[role][name]
            generated = entry.get("generated")
            if task_kind(task).pairs:  # generation: source → references
                for i, text in enumerate(generated):
                    rows.append({"id": i, "set": name, "role": role, "gold": list(examples.references[i]),
                                 "predicted": text, "text": examples.sources[i]})
                continue
            names = examples.label_names
            predicted = examples.map_predictions(entry["predicted"])
            probabilities = entry.get("probabilities")
            for i, (gold, pred) in enumerate(zip(examples.labels, predicted)):
                row = {"id": i, "set": name, "role": role, "gold": names[int(gold)],
                       "predicted": names[int(pred)] if pred >= 0 else None,
                       "probabilities": probabilities[i] if probabilities is not None else None,
                       "group": examples.groups[i] if examples.groups is not None else None,
                       "hard": bool(examples.hard[i]) if examples.hard is not None else None,
                       "text": examples.text_a[i]}
                if examples.text_b is not None:
                    row["text_pair"] = examples.text_b[i]
                if generated is not None:
                    row["generated"] = generated[i]
                rows.append(row)
    return rows


def llm_rows(predictions: dict) -> list[dict]:
    """An LLM suite's rows: per lm-eval item the gold and picked choice (by the task's metric), the
    softmax of the scores that metric compares (acc: the choices' log-likelihoods; acc_norm: per
    character), so the pick is the most probable choice, the log-likelihoods and the choices' lengths
    in characters (acc_norm's normaliser); per document of a rolling task its log-likelihood, words
    and bytes; per item of a generation task its first metric's value and the answer."""
    rows = []
    for role in ROLES:
        for name, records in predictions[role].items():
            multiple_choice = records["output_type"] == MULTIPLE_CHOICE
            for i, r in enumerate(records["items"]):
                row = {"id": r["doc"], "set": name, "role": role, "gold": r.get("gold"),
                       "predicted": records["predicted"][i] if multiple_choice else None}
                if multiple_choice:
                    row.update(probabilities=[round(float(p), 6) for p in softmax(scores(r, records["primary"]))],
                               log_likelihoods=r["ll"], choice_lengths=r["chars"])
                elif "ll" in r:
                    row.update(log_likelihoods=[r["ll"]], words=r.get("words"), bytes=r.get("bytes"))
                else:  # a generation task: the first metric's value, and the answer itself
                    row["predicted"] = r["score"]
                    if "response" in r:
                        row["generated"] = r["response"]
                rows.append(row)
    return rows


# ----- intervals -------------------------------------------------------------------------------
def correctness(task, predictions: dict) -> dict:
    """``{role: {set: bool array}}``: which examples each model got right (classification)."""
    return {role: {name: examples.map_predictions(predictions[role][name]["predicted"]) == np.asarray(examples.labels)
                   for name, examples in task.eval_sets().items()} for role in ROLES}


def intervals_section(task, predictions: dict, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES) -> Intervals:
    """Bootstrap intervals for every accuracy on the card: per set, dev hard / easy, the pooled
    challenge accuracy, F_bias (paired) and the change compressed − base of every set and of the pooled
    challenge accuracy (``delta``: paired, the same examples resampled for both models). Entries of
    empty subsets have ``n`` 0 and no interval.
    Generation tasks get ``sets`` {} (their metrics are corpus scores, not resampled here)."""
    section = {"method": "percentile bootstrap", "confidence": DEFAULT_CONFIDENCE, "n_resamples": n_resamples,
               "seed": seed, "sets": {}, "hard_easy": None, "challenge": None, "f_bias": None, "delta": None}
    if not task_kind(task).labelled:
        return Intervals(**section)
    correct = correctness(task, predictions)
    boot = lambda values: Interval(**bootstrap_accuracy(values, n_resamples, seed))  # noqa: E731
    section["sets"] = {name: {role: boot(correct[role][name]) for role in ROLES} for name in correct["base"]}
    change = lambda base, comp: paired_intervals(base, comp, n_resamples, seed)["delta"]  # noqa: E731
    section["delta"] = {"sets": {name: change(correct["base"][name], correct["compressed"][name])
                                 for name in correct["base"]}, "challenge": None}
    dev = task.dev
    if dev.hard is not None:
        hard = np.asarray(dev.hard, dtype=bool)
        section["hard_easy"] = {role: {"hard": boot(correct[role]["dev"][hard]),
                                       "easy": boot(correct[role]["dev"][~hard])} for role in ROLES}
    pooled = [name for name in task.pooled if name in correct["base"]]
    if pooled:
        joined = {role: np.concatenate([correct[role][name] for name in pooled]) for role in ROLES}
        section["challenge"] = {role: boot(joined[role]) for role in ROLES}
        section["delta"]["challenge"] = change(joined["base"], joined["compressed"])
        if joined["base"].size and correct["base"]["dev"].size:
            section["f_bias"] = bootstrap_f_bias(correct["base"]["dev"], joined["base"], correct["compressed"]["dev"],
                                                 joined["compressed"], n_resamples, seed)
    return Intervals(**section)


def timing_section(speed: dict, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES) -> dict | None:
    """Median / IQR of the raw per-repeat times (seconds) of both models and the speedup interval,
    for latency and throughput (a causal LM: of its prefill and its whole generate calls, and the
    decode step's interval, ``decode_interval``); None when the speed result carries no raw times."""
    times = speed.get("times_s")
    if not times:
        return None
    section = {part: {"base": timing_summary(t["base"]), "compressed": timing_summary(t["compressed"]),
                      "speedup": speedup_interval(t["base"], t["compressed"], n_resamples, seed)}
               for part, t in times.items()}
    for part in ("latency", "throughput"):
        if f"generate {part}" in times and f"prefill {part}" in times:
            section[f"decode {part}"] = {"speedup": decode_interval(times[f"prefill {part}"],
                                                                    times[f"generate {part}"], n_resamples, seed)}
    return section


def decode_interval(prefill: dict, generate: dict, n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict:
    """Percentile bootstrap interval of the decode speedup ``(median generate − median prefill)`` of
    the base over the compressed model's (``kinds/causal_lm.speed``: per-token time), each of the four
    lists resampled independently. A resample whose difference is ≤ 0 (generating no slower than the
    prefill: noise) has no ratio; when any has none, the speedup is not measurable and ``unbounded``."""
    rng = np.random.default_rng(seed)

    def medians(times):
        values = np.asarray(times, dtype=np.float64)
        return np.median(values[rng.integers(0, values.size, size=(n_resamples, values.size))], axis=1)

    steps = {role: medians(generate[role]) - medians(prefill[role]) for role in ROLES}
    point = {role: float(np.median(generate[role]) - np.median(prefill[role])) for role in ROLES}
    valid = (steps["base"] > 0) & (steps["compressed"] > 0)
    ratios = steps["base"][valid] / steps["compressed"][valid]
    low, high = (np.percentile(ratios, [50 * (1 - DEFAULT_CONFIDENCE), 50 * (1 + DEFAULT_CONFIDENCE)]).tolist()
                 if ratios.size else (None, None))
    unbounded = bool(not valid.all())
    return {"speedup": point["base"] / point["compressed"] if min(point.values()) > 0 else None,
            "low": low, "high": high, "unbounded": unbounded,
            "measurable": bool(not unbounded and (low > 1 or high < 1)), "n_resamples": n_resamples}


# ----- training and warnings -------------------------------------------------------------------
def training_section(base_epochs: float | None, student_init: str, fine_tunes: list[dict]) -> dict:
    """Epochs seen by each model: the base (teacher) and the compressed model (the teacher's epochs
    when it starts from the teacher, plus every fine-tuning run of the method)."""
    extra = float(sum(run["epochs"] for run in fine_tunes))
    inherited = base_epochs if student_init == "teacher" else 0.0
    total = None if inherited is None else inherited + extra
    return {"base_epochs": base_epochs, "student_init": student_init, "fine_tunes": fine_tunes,
            "compressed_extra_epochs": extra, "compressed_epochs": total}


def collect(task, results: dict, predictions: dict, bias: dict | None, training: dict | None) -> list[str]:
    """The warnings of ``report.trust`` that apply to this run, in reading order."""
    found = []
    own = task_kind(task).hook("warnings")  # a kind's own (an LLM suite: tasks whose base is at chance)
    if own is not None:
        return own(task, predictions)
    if task_kind(task).labelled:
        dev = task.dev
        counts = np.bincount(np.asarray(dev.labels), minlength=len(dev.label_names))
        majority = float(counts.max() / counts.sum()) if counts.sum() else None
        accuracy = results["base"]["sets"]["dev"].get("accuracy")
        if accuracy is not None and len(task.label_names) >= 2:
            found.append(trust.near_chance("dev", accuracy, len(task.label_names), majority, role="base"))
        for name in task.challenges:
            challenge = results["base"]["sets"].get(name, {}).get("accuracy")
            if challenge is not None and len(task.label_names) >= 2:
                found.append(trust.below_chance(name, challenge, len(task.label_names)))
        if bias is not None and results["base"].get("challenge_pooled") is not None:
            found.append(trust.gap_not_positive(bias.get("gap_base")))
        for role in ROLES:
            for name, entry in task.eval_sets().items():
                predicted = entry.map_predictions(predictions[role][name]["predicted"])
                shares = trust.predicted_shares(entry.label_names[p] if p >= 0 else "(no label)" for p in predicted)
                found.append(trust.single_class(name, shares, role=role))
    else:
        for role in ROLES:
            for name in task.eval_sets():
                found.append(trust.near_constant_generation(name, predictions[role][name]["generated"], role=role))
    if training and training.get("compressed_epochs") is not None and training.get("base_epochs") is not None:
        metric = "accuracy" if task_kind(task).labelled else task.metric
        base, comp = (results[role]["sets"]["dev"].get(metric) for role in ROLES)
        if base is not None and comp is not None and comp > base:
            found.append(trust.more_training_than_base(training["base_epochs"], training["compressed_epochs"]))
    return [warning for warning in found if warning]  # the checks that fired (None: passed), in order


def run_calibration_leak(task, run, methods: list, kind, texts: list[str] | None) -> str | None:
    """``trust.calibration_leak`` of a compress run whose chain calibrates on text: its texts
    (``--calibration-data``'s, read by the pipeline; else an LLM suite's calibration split: ``--train`` /
    the default XSum) against what the card evaluates (an LLM suite's perplexity text, a causal LM's
    perplexity file, the sets); ``kind``: the run's model kind (``kinds/base.ModelKind``)."""
    from ..metrics.perplexity import default_perplexity_file

    if not any(m.config.calibration == "text" for m in methods):
        return None
    if texts is None and task_kind(task).calibration_only:
        texts = list(task.train.text_a)
    if texts is None:
        return None  # the task's own training split: disjoint from its evaluation sets by the task's making
    ppl = None
    if kind.language_model and task_kind(task).labelled:  # held-out perplexity of a zero-shot run
        ppl = run.eval.perplexity_file or default_perplexity_file(run.task.data_dir)
    return trust.calibration_leak(texts, evaluated_texts(task, ppl))


def evaluated_texts(task, perplexity_file: str | None = None) -> dict[str, str]:
    """{what: text} of what a run evaluates that calibration text could leak into (``trust.calibration_leak``):
    an LLM suite's perplexity text, a causal LM's held-out perplexity file, every evaluation set's inputs."""
    from ..data.texts import read_texts

    found = {}
    suite = getattr(task, "suite", None)
    if suite is not None and suite.perplexity is not None:
        found[f"{suite.perplexity.name} ({suite.perplexity.source})"] = suite.perplexity.text
    if perplexity_file:
        found[f"the perplexity file {perplexity_file}"] = "\n".join(read_texts(perplexity_file))
    for name, examples in (task.eval_sets().items() if suite is None else ()):
        texts = list(getattr(examples, "text_a", None) or getattr(examples, "sources", None) or [])
        found[f"the {name} set"] = "\n".join(texts + list(getattr(examples, "text_b", None) or []))
    return found


def f_bias_meaningful(bias: dict | None, warnings: list[str]) -> bool:
    """F_bias is meaningful only with a positive base gap and a base model above chance."""
    if not bias or bias.get("f_bias") is None:
        return False
    if bias.get("gap_base") is None or bias["gap_base"] <= 0:
        return False
    return not any(trust.VOIDS_F_BIAS in w for w in warnings)


task_kind("lm-eval").register(compare=llm_section, prediction_rows=llm_rows, warnings=near_chance_warnings)
