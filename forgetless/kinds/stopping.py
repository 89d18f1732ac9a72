"""``--until-interval W``: answers sized to the question. Base and compressed are scored together on
the suite's items in a seeded random order, round by round, and stop as soon as the headline's paired
change (the mean over the headline tasks of compressed − base correct, per item) has an interval
narrower than ``W`` points; "is this within one point?" gets its answer from the fewest items.

The interval is an anytime-valid confidence sequence (``metrics/sequences.py``: Waudby-Smith & Ramdas
2024, empirical Bernstein with predictable bets, without replacement), so looking after every round
and stopping when it is narrow keeps its coverage; a bootstrap interval at that moment would not.
Rounds are stratified: round t takes the t-th item of every multiple-choice task's seeded order (each
task its own stream of the seed) and observes Z_t, the mean over the K headline tasks of that item's
difference. Each task's items are drawn without replacement from its N items (``--eval-size``, or
the smallest task's size), so E[Z_t | past] = (N·Δ − Σ_{i<t} Z_i) / (N − t + 1) for the headline Δ:
the without-replacement sequence of Z applies (after the last item it is the exact change of these
items, so the run always ends with the target met). The headline tasks are the card's (the base above
chance + ``CHANCE_MARGIN`` on the items scored so far; all tasks when none is); the sequence is valid
for the set it is computed on. Other tasks (rolling log-likelihood) and the perplexity text are
scored once, after the stop.
"""
from __future__ import annotations

import zlib

import numpy as np

from .. import progress
from ..errors import ConfigError
from ..bootstrap import DEFAULT_CONFIDENCE
from ..metrics.sequences import METHOD, paired_sequence
from ..llm.records import MULTIPLE_CHOICE

ROUND = 32  # items per task scored between two looks


def evaluate_until(evaluate, models: dict, suite) -> dict:
    """``{role: evaluation}`` of ``models`` (roles ``base`` and ``compressed``) on ``suite``, its
    multiple-choice items round by round until the headline is narrow enough (module docstring);
    ``evaluate(model, part)`` evaluates one model on a part of the suite (``CausalLMKind.evaluate_suite``)."""
    from ..llm.suite import say

    choice = [n for n, s in suite.sets.items() if s.output_type == MULTIPLE_CHOICE]
    if not choice:
        raise ConfigError("--until-interval: the suite has no multiple-choice task to stop on")
    population = min(len(suite.sets[n]) for n in choice)
    orders = {n: _order(suite.sets[n].items, n, suite.seed)[:population] for n in choice}
    results, done = {role: None for role in models}, 0
    while True:
        upto = min(population, done + ROUND)
        part = suite.restricted({n: orders[n][done:upto] for n in choice}, perplexity=False)
        results = {role: merge(results[role], _scoped(role, evaluate, model, part)) for role, model in models.items()}
        done = upto
        status = stopping_status(results, orders, done, population, suite.until_interval)
        say(f"until-interval: {done} of {population} items per task, headline change "
            f"[{100 * status['interval']['low']:+.1f}, {100 * status['interval']['high']:+.1f}] points "
            f"({status['width_points']:.1f} wide; target {suite.until_interval:g})")
        if status["reached"] or done == population:
            break
    rest = {n: s.items for n, s in suite.sets.items() if n not in choice}
    if rest or suite.perplexity is not None:
        part = suite.restricted(rest, perplexity=True)
        results = {role: merge(results[role], _scoped(role, evaluate, model, part)) for role, model in models.items()}
    for result in results.values():
        result["zero_shot"]["stopping"] = status
    return results


def _scoped(role: str, evaluate, model, part) -> dict:
    """``evaluate(model, part)`` with its bars and lines naming the model (``base: lm-eval …``)."""
    with progress.scope(role):
        return evaluate(model, part)


def stopping_status(results: dict, orders: dict[str, list[int]], done: int, population: int, target: float) -> dict:
    """The card's ``llm.stopping``: the headline's confidence sequence after ``done`` rounds."""
    from ..report.llm_section import chance_level
    from ..report.trust import CHANCE_MARGIN

    base, comp = results["base"]["predictions"], results["compressed"]["predictions"]
    above = [n for n in orders if _mean(base[n]) > chance_level(base[n]) + CHANCE_MARGIN]
    headline = above or list(orders)
    differences = []
    for name in headline:
        b, c = _correct(base[name]), _correct(comp[name])
        differences.append([c[doc] - b[doc] for doc in orders[name][:done]])
    sequence = paired_sequence(np.mean(differences, axis=0), DEFAULT_CONFIDENCE, population)
    return {"rule": "until-interval", "method": METHOD, "confidence": DEFAULT_CONFIDENCE, "target_points": target,
            "interval": {k: sequence[k] for k in ("value", "low", "high")}, "width_points": 100 * sequence["width"],
            "reached": 100 * sequence["width"] < target, "exhausted": done == population, "items_per_task": done,
            "population_per_task": population,
            "round_size": ROUND, "headline_tasks": headline, "order": "seeded random, one item per task per round"}


def merge(first: dict | None, second: dict) -> dict:
    """One model's evaluation of two disjoint parts of a suite as one (items in doc order)."""
    if first is None:
        return second
    from ..llm.suite import summarize

    out = {**first, "predictions": dict(first["predictions"]), "sets": dict(first["sets"])}
    for name, records in second["predictions"].items():
        if name in out["predictions"]:
            records = _joined(out["predictions"][name], records)
        out["predictions"][name], out["sets"][name] = records, summarize(records)
    if "language_model" in second:
        out["language_model"] = second["language_model"]
    caches = [first["zero_shot"].get("cache") or {}, second["zero_shot"].get("cache") or {}]
    out["zero_shot"] = {**first["zero_shot"], "cache": {"path": caches[0].get("path") or caches[1].get("path"),
                                                        "reused": all(c.get("reused") for c in caches)}}
    return out


def _joined(first: dict, second: dict) -> dict:
    keys = ["items"] + (["predicted"] if "predicted" in first else [])
    rows = sorted(zip(*(first[k] + second[k] for k in keys)), key=lambda row: row[0]["doc"])
    return {**first, **{k: [row[i] for row in rows] for i, k in enumerate(keys)}}


def _order(items: list[int], name: str, seed: int) -> list[int]:
    rng = np.random.default_rng([seed, zlib.crc32(name.encode()), 1])
    return [items[i] for i in rng.permutation(len(items))]


def _correct(records: dict) -> dict[int, int]:
    return {r["doc"]: int(r[records["primary"]]) for r in records["items"]}


def _mean(records: dict) -> float:
    return float(np.mean(list(_correct(records).values())))
