"""What forgetless keeps of each item lm-eval scored: read from ``simple_evaluate``'s logged samples,
never recomputed (the numbers equal lm-eval's, tested in ``tests/llm/test_llm_engine.py``).

* ``multiple_choice``: the gold choice (lm-eval's own rule: ``doc_to_target``, or ``doc_to_text`` for a
  task whose choices are contexts, e.g. WinoGrande), each choice's log-likelihood and greedy flag and
  its length in characters, and lm-eval's per-item ``acc`` / ``acc_norm`` (acc_norm = the choice with
  the highest log-likelihood per character; ``primary`` names acc_norm where the task reports it).
  ``argmax`` of the log-likelihoods must give lm-eval's ``acc``: a mismatch is an error, not a number.
* ``loglikelihood_rolling`` (perplexity): the document's log-likelihood and its word and byte counts
  (lm-eval's ``word_perplexity`` / ``byte_perplexity`` pairs).
* ``generate_until``: lm-eval's answer string, its generated token ids (``llm/generation.py``), the
  prompt's last ``PROMPT_TAIL`` characters and every per-item metric value lm-eval computed (the task's
  ``process_results``: exact_match, F1, ROUGE …); a metric whose per-item value is a list (IFEval's
  instruction-level accuracy: one value per instruction) keeps the list, and lm-eval's aggregate is
  the mean over all of them. ``primary`` is the task's first metric.
* any other output type (``loglikelihood``): the value of the task's first metric.

A multiple-choice item scored by forgetless (shared-context) is a **near tie** under a metric when
moving each choice's log-likelihood by at most ``TOLERANCE`` per scored token (what it may
differ from lm-eval's own fp32 computation) could change the pick: the best choice leads another by
less than the two moves together (per character for acc_norm). Only on such items may the two
scorings decide differently; the card counts them. (lm-eval's own scoring, ``--exact-lm-eval``, has none.)
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError, DataError

MULTIPLE_CHOICE, ROLLING, GENERATE = "multiple_choice", "loglikelihood_rolling", "generate_until"
PROMPT_TAIL = 400  # characters of a generation prompt kept with its item (the card shows where answers part)
SHARED, EXACT = "shared-context", "lm-eval"  # who computes the log-likelihoods: scoring.py or lm-eval (llm/lm.py)
TOLERANCE = 5e-5  # nats per scored token between a log-likelihood of scoring.py and lm-eval's own (measured: ≤ 1.1e-5)


def task_records(task, samples: list[dict], ends: list[int] = ()) -> dict:
    """``{"output_type", "primary", "items": [record]}`` of one task, items in doc order; ``ends``: the
    model's end-of-sequence ids (a generated answer that starts with one is empty)."""
    kind = task.OUTPUT_TYPE
    if kind == MULTIPLE_CHOICE:
        metrics = set(samples[0]["metrics"]) if samples else set()
        primary = "acc_norm" if "acc_norm" in metrics else "acc"
        return {"output_type": kind, "primary": primary, "items": [_choice_record(task, s) for s in samples]}
    if kind == ROLLING:
        return {"output_type": kind, "primary": "word_perplexity", "items": [_rolling_record(s) for s in samples]}
    if kind == GENERATE:
        return generation_records(task, samples, ends)
    metric = samples[0]["metrics"][0] if samples and samples[0].get("metrics") else None
    if metric is None:
        raise ConfigError(f"lm-eval task {task.config.task}: logs no per-item metric to compare models on")
    return {"output_type": kind, "primary": metric,
            "items": [{"doc": int(s["doc_id"]), "score": float(s[metric])} for s in samples]}


def generation_records(task, samples: list[dict], ends: list[int] = ()) -> dict:
    """A ``generate_until`` task's records: per item the answer (as generated, before lm-eval's filters), its
    tokens, the prompt's tail, each metric's value and whether the answer is empty (blank, or its first token
    one of ``ends``: the model said nothing). lm-eval logs an item once per filter of the task (GSM8K's
    strict-match and flexible-extract): a metric is then named as lm-eval's results name it, ``metric,filter``."""
    name = task.config.task
    by_doc: dict[int, list[dict]] = {}
    for sample in samples:
        by_doc.setdefault(int(sample["doc_id"]), []).append(sample)
    filtered = any(sample.get("filter", "none") != "none" for sample in samples)
    items, metrics = [], []
    for doc, logged in by_doc.items():
        first = logged[0]
        values = {(f"{m},{s.get('filter', 'none')}" if filtered else m): item_value(name, m, s[m])
                  for s in logged for m in s.get("metrics") or []}
        metrics = metrics or list(values)
        prompt = str(first["arguments"][0][0]) if first.get("arguments") else ""
        raw = first.get("resps") or [first["filtered_resps"]]
        response = raw[0][0] if isinstance(raw[0], list) else raw[0]
        tokens = list(first.get("generated_tokens") or [])
        items.append({"doc": doc, "response": str(response), "tokens": tokens, "metrics": values,
                      "prompt": prompt if len(prompt) <= PROMPT_TAIL else "…" + prompt[-PROMPT_TAIL:],
                      "score": unit_mean(values[metrics[0]]) if metrics else float("nan"),
                      "empty": not str(response).strip() or (bool(tokens) and tokens[0] in ends)})
    if not metrics:
        raise ConfigError(f"lm-eval task {name}: logs no per-item metric to compare models on")
    return {"output_type": GENERATE, "primary": metrics[0], "metrics": metrics, "items": items}


def item_value(task: str, metric: str, value):
    """One item's value of a generation metric as a number (a bool as 0 / 1), or a list of numbers (one
    per unit: IFEval's instructions); one ``ConfigError`` for anything else (a corpus-level metric's
    per-item tuple, e.g. BLEU's references and prediction, cannot be compared item by item)."""
    def number(v):
        if isinstance(v, (bool, int, float, np.integer, np.floating, np.bool_)) and np.isfinite(float(v)):
            return float(v)
        raise ConfigError(f"lm-eval task {task}: metric {metric} gives per-item values like {str(value)[:60]!r}, "
                          "not numbers; forgetless pairs models on per-item numbers (a corpus-level metric such as "
                          "BLEU is not one): remove it from metric_list")
    if isinstance(value, (list, tuple)) and not isinstance(value, str):
        return [number(v) for v in value]
    return number(value)


def unit_values(items: list[dict], metric: str) -> np.ndarray:
    """A generation metric's values over its units, items in order (a list value's units one by one)."""
    values = []
    for record in items:
        value = record["metrics"][metric]
        values.extend(value if isinstance(value, list) else [value])
    return np.asarray(values, dtype=float)


def unit_mean(value) -> float:
    """An item's value as one number: the mean of a list value's units (NaN for an empty list)."""
    if isinstance(value, list):
        return float(np.mean(value)) if value else float("nan")
    return float(value)


def gold_choice(task, doc, choices: list[str]) -> int:
    """The index of the gold choice, by lm-eval's rule (``ConfigurableTask.process_results``)."""
    gold = task.doc_to_text(doc) if task.multiple_input else task.doc_to_target(doc)
    if isinstance(gold, list):
        if len(gold) != 1:
            raise ConfigError(f"lm-eval task {task.config.task}: items with several gold choices are not "
                              "supported by the paired analysis")
        gold = gold[0]
    if isinstance(gold, str):
        gold = choices.index(gold) if gold in choices else (int(gold) if gold.strip().isdigit() else -1)
    if not 0 <= int(gold) < len(choices):
        raise DataError(f"lm-eval task {task.config.task}: gold answer {gold!r} is not one of the {len(choices)} "
                        "choices of an item")
    return int(gold)


def _choice_record(task, sample: dict) -> dict:
    responses = sample["filtered_resps"]
    choices = [str(c) for c in task.doc_to_choice(sample["doc"])]
    if len(responses) != len(choices):
        raise ConfigError(f"lm-eval task {task.config.task}: {len(responses)} log-likelihoods for {len(choices)} "
                          "choices (acc_mutual_info is not supported by the paired analysis)")
    lls = [float(r[0]) for r in responses]
    record = {"doc": int(sample["doc_id"]), "gold": gold_choice(task, sample["doc"], choices), "ll": lls,
              "greedy": [bool(r[1]) for r in responses], "chars": [len(c) for c in choices],
              "acc": int(sample["acc"])}
    if "acc_norm" in sample:
        record["acc_norm"] = int(sample["acc_norm"])
    if "scored_tokens" in sample:  # shared-context scoring: each choice's continuation tokens
        record["tokens"] = list(sample["scored_tokens"])
    if int(np.argmax(lls) == record["gold"]) != record["acc"]:
        raise ConfigError(f"lm-eval task {task.config.task}, doc {record['doc']}: lm-eval's acc disagrees with the "
                          "highest log-likelihood choice; its gold rule is not understood here")
    return record


def _rolling_record(sample: dict) -> dict:
    record = {"doc": int(sample["doc_id"]), "ll": float(np.asarray(sample["filtered_resps"]).reshape(-1)[0])}
    for key, metric in (("words", "word_perplexity"), ("bytes", "byte_perplexity")):
        if isinstance(sample.get(metric), (list, tuple)):
            record[key] = int(sample[metric][1])
    return record


def scores(record: dict, primary: str) -> np.ndarray:
    """A multiple-choice item's per-choice scores under ``primary``: the log-likelihood (acc) or the
    log-likelihood per character (acc_norm, as lm-eval normalises)."""
    lls = np.asarray(record["ll"], dtype=float)
    return lls / np.asarray(record["chars"], dtype=float) if primary == "acc_norm" else lls


def correct(record: dict, primary: str) -> int:
    """lm-eval's per-item value of the primary metric (0 / 1)."""
    return int(record[primary])


def near_tie(record: dict, metric: str, tolerance: float = TOLERANCE) -> bool:
    """Whether ``tolerance`` nats per scored token on each choice's log-likelihood could change the
    item's pick under ``metric`` (module docstring); never for an item without token counts."""
    if "tokens" not in record:
        return False
    values = scores(record, metric)
    weights = np.asarray(record["tokens"], dtype=float)
    if metric == "acc_norm":
        weights = weights / np.asarray(record["chars"], dtype=float)
    best = int(np.argmax(values))
    others = np.arange(values.size) != best
    return bool(np.any(values[best] - values[others] < tolerance * (weights[best] + weights[others])))


def near_ties(records: dict) -> dict[str, int]:
    """``{metric: items that are near ties}`` of a multiple-choice task, for acc and (when it has it) acc_norm."""
    metrics = ("acc", "acc_norm") if records["primary"] == "acc_norm" else ("acc",)
    return {m: sum(near_tie(r, m) for r in records["items"]) for m in metrics}
