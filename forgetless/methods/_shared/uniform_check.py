"""Proving a bit budget's mix against the uniform scheme of the same or larger size (``--bits-budget``, unless
``--no-uniform-check``): the smallest single format of ``--budget-formats`` that every unit can take and that
stores at least the mix's bits per weight (W4A16-g64 for a mix at 4.5 bits) is applied to the base by the same
method, evaluated on the same items as the run's compressed model, and the two are paired item by item with the
card's own comparison (``report.card.comparison``, ``report/llm_section.py``): on an LLM suite the pooled
accuracy of the headline tasks, mixed − uniform with its paired bootstrap interval, the flips between them
(exact McNemar test) and the KL divergence between their choice distributions. The verdict reads the interval:
above 0 "better", below 0 "worse", else "not measurably different" (the mix is then no worse at its smaller
or equal size). The result goes into the budget's card section (``uniform_check``)."""
from __future__ import annotations

import copy

from .budget import candidate_config, sized


def uniform_candidate(config, model, reached: float):
    """``(candidate, bits per weight, bytes)`` of the uniform format to compare with, or None (module docstring)."""
    units_, chosen, costs, _, _ = sized(config, model)
    weights = sum(u.weights for u in units_)
    fitting = []
    for index, candidate in enumerate(chosen):
        sizes = [row[index] for row in costs]
        if not candidate.kept and None not in sizes and 8 * sum(sizes) / weights >= reached - 1e-9:
            fitting.append((8 * sum(sizes) / weights, sum(sizes), candidate))
    if not fitting:
        return None
    bits, stored, candidate = min(fitting, key=lambda f: f[0])
    return candidate, bits, stored


def verdict(delta: dict) -> str:
    """"better", "worse" or "not measurably different" from the interval of mixed − uniform."""
    if delta.get("low") is None:
        return "not measured"
    if delta["low"] > 0:
        return "better"
    return "worse" if delta["high"] < 0 else "not measurably different"


def budgeted_method(methods: list):
    """The method of a chain that spent a budget with the uniform check on (None: none did)."""
    return next((m for m in methods if getattr(m, "plan", None) is not None and not m.config.no_uniform_check), None)


def run_uniform_check(ctx, method, teacher, evaluate, compressed_predictions: dict, base_predictions: dict,
                      seed: int) -> None:
    """The check of the module docstring for ``method`` (its plan's section gets ``uniform_check``);
    ``evaluate(model)`` evaluates a model as the run evaluated its compressed one (with predictions). Mixed and
    uniform are pooled over the run's headline tasks (the base's above chance: ``headline_names``), not over
    the tasks the uniform model happens to be above chance on."""
    from ...llm.records import MULTIPLE_CHOICE
    from ...registry import METHODS
    from ...report.llm_section import headline_and_pooled, headline_names

    section = method.plan.section
    found = uniform_candidate(method.config, teacher, section["bits_per_weight"])
    if found is None:
        section["uniform_check"] = {"skipped": "no single format of --budget-formats fits every unit at the mix's "
                                               "size or above"}
        return
    candidate, bits, stored = found
    if not getattr(ctx.task, "suite", None):
        section["uniform_check"] = {"skipped": "the uniform check pairs an LLM suite's items (lm-eval tasks)"}
        return
    uniform_ctx = copy.copy(ctx)
    uniform_ctx.notes = []  # the uniform run's own notes stay off the card
    uniform = METHODS.build(candidate_config(method.config, candidate)).compress(copy.deepcopy(teacher), uniform_ctx)
    results = evaluate(uniform.eval())
    records = {"base": results.pop("predictions"), "compressed": compressed_predictions}
    names, near_chance = headline_names(ctx.task, base_predictions), False
    if not names:  # no task above chance: every multiple-choice task's items, flagged
        names = [n for n in ctx.task.suite.sets if records["base"][n]["output_type"] == MULTIPLE_CHOICE]
        near_chance = True
    headline, pooled = headline_and_pooled(records, names, seed) if names else ({}, {})
    delta = (pooled.get("accuracy") or {}).get("delta") or {}
    section["uniform_check"] = {
        "format": candidate.name, "bits_per_weight": bits, "bytes": stored, "method": method.config.name,
        "headline": {"uniform": None if near_chance else headline.get("base"),
                     "mixed": None if near_chance else headline.get("compressed")},
        "accuracy": pooled.get("accuracy"), "difference": delta, "flips": pooled.get("flips"), "kl": pooled.get("kl"),
        "tasks": pooled.get("tasks"), "near_chance": near_chance, "verdict": verdict(delta)}
