"""What an LLM card says about how its numbers were computed (``report/llm_section.py`` adds it to the
``llm`` section, ``report/llm_markdown.py`` prints it):

* ``scoring``: who computed the log-likelihoods (``shared-context``: forgetless, ``llm/scoring.py``;
  ``lm-eval``: lm-eval's own HFLM, ``--exact-lm-eval``), the tolerance per scored token against lm-eval's own,
  and per task and model the near ties (``records.near_tie``): the only items whose pick the two
  scorings may make differently.
* ``stopping`` (``--until-interval``, ``kinds/stopping.py``): the rule, the confidence sequence, the items
  needed; the headline change then carries that sequence's interval, not a bootstrap interval (which
  does not hold at a data-dependent stopping time).
"""
from __future__ import annotations

from .records import EXACT, SHARED, TOLERANCE

ROLES = ("base", "compressed")
PATHS = {SHARED: "forgetless's shared-context scoring (each item's context run once, its KV cache per choice)",
         EXACT: "lm-eval's own scoring (its HFLM runs every choice in full; --exact-lm-eval)"}


def add_scoring(section: dict, results: dict) -> None:
    """``section["scoring"]`` and, after ``--until-interval``, ``section["stopping"]`` with the headline's
    interval replaced by the confidence sequence's."""
    described = results["base"]["zero_shot"]
    path = described.get("scoring", EXACT)
    ties = {name: {role: results[role]["sets"][name]["near_ties"] for role in ROLES}
            for name, entry in results["base"]["sets"].items() if "near_ties" in entry}
    section["scoring"] = {"path": path, "tolerance_nats_per_token": TOLERANCE if path == SHARED else 0.0,
                          "near_ties": ties}
    stopping = described.get("stopping")
    if stopping:
        section["stopping"] = stopping
        head = section.get("headline")
        if head and set(section.get("headline_tasks") or []) == set(stopping["headline_tasks"]):
            head["delta"] = {**head["delta"], "low": stopping["interval"]["low"], "high": stopping["interval"]["high"],
                             "interval": stopping["method"]}


def scoring_lines(llm: dict) -> list[str]:
    """The card's lines on the scoring path, near ties and the stopping rule."""
    scoring = llm.get("scoring")
    if not scoring:
        return []
    lines = ["", f"Log-likelihoods: {PATHS.get(scoring['path'], scoring['path'])}."]
    if scoring["path"] == SHARED:
        ties = ", ".join(f"{name} " + " ".join(f"{m} {v['base'][m]}/{v['compressed'][m]}" for m in v["base"])
                         for name, v in scoring["near_ties"].items())
        lines[-1] += (f" Each choice's log-likelihood is within {scoring['tolerance_nats_per_token']:g} nats per scored "
                      "token of lm-eval's own (whose fp32 forward is the farther from an fp64 one); "
                      f"a pick can differ from lm-eval's only on a near tie (the best choice ahead by less than "
                      f"that could move it), counted per task and metric (base/compressed): {ties or 'none'}.")
    stopping = llm.get("stopping")
    if stopping:
        i = stopping["interval"]
        verdict = "every item scored: the change of these items is exact" if stopping["exhausted"] else \
            "target reached"
        lines.append(f"Stopped by --until-interval {stopping['target_points']:g}: after {stopping['items_per_task']} of "
                     f"{stopping['population_per_task']} items per task ({stopping['order']}, rounds of "
                     f"{stopping['round_size']}), the headline change is {100 * i['value']:+.1f} "
                     f"[{100 * i['low']:+.1f}, {100 * i['high']:+.1f}] points, {stopping['width_points']:.1f} wide "
                     f"({verdict}); its interval is a {stopping['confidence']:.0%} {stopping['method']}, valid "
                     "whenever the run stops (a bootstrap interval is not).")
    return lines
