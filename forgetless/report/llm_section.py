"""The card's ``llm`` section: an LLM suite (task kind ``lm-eval``) compared item by item, from the
per-item records lm-eval logged for each model (``llm/records.py``), with ``metrics/paired.py``.

Per multiple-choice task: acc and acc_norm of both models with the paired bootstrap interval of the
change; flips correct → wrong / wrong → correct with the exact McNemar test (Dutta et al. 2024); KL
divergence between the two models' distributions over the choices (mean, interval); hard / medium /
easy thirds by the base's own margin (the gold choice's score minus the best wrong one's, in the
task's metric: log-likelihood per character for acc_norm) with accuracy, flips and KL in each. A
task whose base is at most ``CHANCE_MARGIN`` above chance (the mean of 1 / choices over its items) is
flagged and left out of the headline (the mean over the other tasks) and the pooled numbers. Task
pairs of one benchmark at two difficulties (ARC-Easy / ARC-Challenge) get the difference of their
changes. Rolling log-likelihood tasks (lm-eval's ``wikitext``) give word / byte perplexity. Generation
tasks (``generate_until``) give each lm-eval metric of both models with the paired interval of the
change, flips and McNemar for a 0 / 1 metric, and where the answers part (``llm/card.generation_task``).

Terciles are defined by the base's margin, so the base is mostly wrong in the hard third and right in
the easy one: there the compressed model can mostly only gain, resp. only lose (regression toward
the mean). Compare flips and KL across thirds, not the raw accuracy change alone.
"""
from __future__ import annotations

import numpy as np

from ..llm.card import ROLES, add_divergence, add_scoring
from ..llm.records import GENERATE, MULTIPLE_CHOICE, ROLLING, scores
from ..bootstrap import DEFAULT_RESAMPLES, mean_interval
from ..metrics.paired import (TERCILES, choice_kl, difference_of_deltas, flips, macro_intervals, margin,
                              paired_intervals, terciles)
from .llm_generation import generation_task, paired_score
from .llm_markdown import KL_BASIS
from .trust import CHANCE_MARGIN, not_above

PAIRS = (("arc_easy", "arc_challenge"),)  # (easier, harder) name stems of one benchmark


def llm_section(task, results: dict, predictions: dict, seed: int = 0, n_resamples: int = DEFAULT_RESAMPLES) -> dict:
    """``{engine, tasks, headline, pooled, pairs}`` (schema in ``report/card.py``)."""
    records = {role: predictions[role] for role in ROLES}
    tasks = {}
    for number, name in enumerate(task.suite.sets):
        base, comp = records["base"][name], records["compressed"][name]
        if [r["doc"] for r in base["items"]] != [r["doc"] for r in comp["items"]]:
            raise ValueError(f"lm-eval task {name}: base and compressed were evaluated on different items")
        entry = {"output_type": base["output_type"], "metric": base["primary"], "n": len(base["items"]),
                 "size": task.suite.sets[name].size, "source": task.suite.sets[name].source}
        if base["output_type"] == MULTIPLE_CHOICE:
            entry.update(_choice_task(base, comp, seed + number, n_resamples))
        elif base["output_type"] == ROLLING:
            entry.update(_rolling_task(results, name))
        elif base["output_type"] == GENERATE:
            entry.update(generation_task(name, base, comp, seed + number, n_resamples))
        else:
            entry.update(_scored_task(base, comp, seed + number, n_resamples))
        tasks[name] = entry
    headline_tasks = [n for n, t in tasks.items() if t.get("in_headline")]
    pairs_of = {n: _correct_pair(records, n) for n in headline_tasks}
    engine = {k: v for k, v in results["base"]["zero_shot"].items() if k not in ("cache", "truncated_prompts")}
    engine["cache"] = {role: results[role]["zero_shot"].get("cache") for role in ROLES}
    section = {"engine": engine, "tasks": tasks, "headline_tasks": headline_tasks, "kl_basis": KL_BASIS,
               "headline": macro_intervals(list(pairs_of.values()), n_resamples, seed) if headline_tasks else None,
               "pooled": pooled_items(records, headline_tasks, seed, n_resamples) if headline_tasks else None,
               "pairs": _pairs(tasks, records, seed, n_resamples)}
    add_scoring(section, results)  # the scoring path, near ties, --until-interval (llm/card.py)
    add_divergence(section, results)  # --divergence-prompts: along the base's own answers (llm/card.py)
    return section


def chance_level(records: dict) -> float:
    """Expected accuracy of guessing: the mean of 1 / choices over the items."""
    return float(np.mean([1.0 / len(r["ll"]) for r in records["items"]]))


def _against_chance(task, base_predictions: dict):
    """``(name, primary, accuracy, chance, near)`` of each multiple-choice task of the suite, by the base."""
    for name in task.suite.sets:
        records = base_predictions[name]
        if records["output_type"] == MULTIPLE_CHOICE:
            chance, primary = chance_level(records), records["primary"]
            accuracy = float(np.mean([r[primary] for r in records["items"]]))
            yield name, primary, accuracy, chance, accuracy <= chance + CHANCE_MARGIN


def near_chance_warnings(task, predictions: dict) -> list[str]:
    """One warning per multiple-choice task whose base is at most ``CHANCE_MARGIN`` above chance."""
    return [f"base model on {name}: {primary} {not_above(accuracy, chance, 'chance')}; the task is kept out of the "
            "headline and the pooled numbers"
            for name, primary, accuracy, chance, near in _against_chance(task, predictions["base"]) if near]


def headline_names(task, base_predictions: dict) -> list[str]:
    """The headline's tasks: the multiple-choice tasks whose BASE is above chance (``_choice_task``'s rule), so
    that two other models compared on the run's items (a bit budget's mix and its uniform check) are pooled
    over the run's own headline, whichever of them is near chance."""
    return [name for name, *_, near in _against_chance(task, base_predictions) if not near]


def headline_and_pooled(records: dict, names: list[str], seed: int,
                        n_resamples: int = DEFAULT_RESAMPLES) -> tuple[dict, dict]:
    """The headline (mean over the tasks ``names``) and the pooled items of two models' ``records``."""
    pairs = [_correct_pair(records, n) for n in names]
    return macro_intervals(pairs, n_resamples, seed), pooled_items(records, names, seed, n_resamples)


def _correct_pair(records: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    primary = records["base"][name]["primary"]
    return tuple(np.array([r[primary] for r in records[role][name]["items"]], dtype=float) for role in ROLES)


def _choice_task(base: dict, comp: dict, seed: int, n_resamples: int) -> dict:
    primary = base["primary"]
    b_items, c_items = base["items"], comp["items"]
    b_correct = np.array([r[primary] for r in b_items], dtype=float)
    c_correct = np.array([r[primary] for r in c_items], dtype=float)
    kl = np.array([choice_kl(b["ll"], c["ll"]) for b, c in zip(b_items, c_items)])
    margins = np.array([margin(scores(r, primary), r["gold"]) for r in b_items])
    chance = chance_level(base)
    near = float(b_correct.mean()) <= chance + CHANCE_MARGIN
    entry = {"chance": chance, "near_chance": near, "in_headline": not near,
             "acc": paired_intervals([r["acc"] for r in b_items], [r["acc"] for r in c_items], n_resamples, seed),
             "acc_norm": paired_intervals([r["acc_norm"] for r in b_items], [r["acc_norm"] for r in c_items],
                                          n_resamples, seed) if primary == "acc_norm" else None,
             "flips": flips(b_correct, c_correct), "kl": mean_interval(kl, n_resamples, seed),
             "margin": {"base": float(margins.mean()),
                        "compressed": float(np.mean([margin(scores(r, primary), r["gold"]) for r in c_items]))}}
    thirds = terciles(margins)
    entry["hard_easy"] = {part: _part(b_correct[thirds == label], c_correct[thirds == label], kl[thirds == label],
                                      margins[thirds == label], seed, n_resamples)
                          for part, label in TERCILES.items()}
    return entry


def _part(base, comp, kl, margins, seed: int, n_resamples: int) -> dict:
    return {"n": int(base.size), "margin_range": [float(margins.min()), float(margins.max())] if base.size else None,
            "accuracy": paired_intervals(base, comp, n_resamples, seed), "flips": flips(base, comp),
            "kl": mean_interval(kl, n_resamples, seed)}


def _rolling_task(results: dict, name: str) -> dict:
    out = {}
    for metric in ("word_perplexity", "byte_perplexity", "bits_per_byte"):
        b, c = (results[role]["sets"][name].get(metric) for role in ROLES)
        if b is not None and c is not None:
            out[metric] = {"base": b, "compressed": c, "ratio": c / b if b else None}
    b = results["base"]["sets"][name]
    out.update(words=b.get("words"), bytes=b.get("bytes"))
    return out


def _scored_task(base: dict, comp: dict, seed: int, n_resamples: int) -> dict:
    b = np.array([r["score"] for r in base["items"]], dtype=float)
    c = np.array([r["score"] for r in comp["items"]], dtype=float)
    return {**paired_score(b, c, seed, n_resamples), "in_headline": False}


def pooled_items(records: dict, names: list[str], seed: int, n_resamples: int = DEFAULT_RESAMPLES) -> dict:
    """All items of the tasks ``names`` (the headline's) together: item-weighted accuracy, flips, KL."""
    pairs = [_correct_pair(records, n) for n in names]
    base, comp = (np.concatenate([p[i] for p in pairs]) for i in (0, 1))
    kl = np.concatenate([[choice_kl(b["ll"], c["ll"]) for b, c in zip(records["base"][n]["items"],
                                                                      records["compressed"][n]["items"])]
                         for n in names])
    return {"tasks": names, "accuracy": paired_intervals(base, comp, n_resamples, seed), "flips": flips(base, comp),
            "kl": mean_interval(kl, n_resamples, seed)}


def _pairs(tasks: dict, records: dict, seed: int, n_resamples: int) -> list[dict]:
    """Each (easier, harder) pair of ``PAIRS`` present in the suite (same name but the stem)."""
    out = []
    for easy_stem, hard_stem in PAIRS:
        for easy in [n for n in tasks if n.startswith(easy_stem) and tasks[n]["output_type"] == MULTIPLE_CHOICE]:
            hard = hard_stem + easy[len(easy_stem):]
            if hard not in tasks:
                continue
            difference = difference_of_deltas(_correct_pair(records, easy), _correct_pair(records, hard),
                                              n_resamples, seed)
            delta = {n: tasks[n][tasks[n]["metric"]]["delta"] for n in (easy, hard)}
            out.append({"easier": easy, "harder": hard, "delta_easier": delta[easy], "delta_harder": delta[hard],
                        "difference": difference,
                        "meaningful": not (tasks[easy]["near_chance"] or tasks[hard]["near_chance"])})
    return out
