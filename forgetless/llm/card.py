"""What an LLM card says about how its numbers were computed (``report/llm_section.py`` adds it to the
``llm`` section, ``report/llm_markdown.py`` prints it):

* ``scoring``: who computed the log-likelihoods (``shared-context``: forgetless, ``llm/scoring.py``;
  ``lm-eval``: lm-eval's own HFLM, ``--exact-lm-eval``), the tolerance per scored token against lm-eval's own,
  and per task and model the near ties (``records.near_tie``): the only items whose pick the two
  scorings may make differently.
* ``stopping`` (``--until-interval``, ``kinds/stopping.py``): the rule, the confidence sequence, the items
  needed; the headline change then carries that sequence's interval, not a bootstrap interval (which
  does not hold at a data-dependent stopping time).
* ``divergence`` (``--divergence-prompts``, ``llm/answers.py``): the compressed model along the base's own
  greedy answers: KL, top-1 agreement, identical answers, first divergence, KL by the base's entropy thirds,
  and prompts where the answers part (their text escaped: a model's words stay text on every page).
"""
from __future__ import annotations

import re

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


def scoring_lines(scoring: dict | None, stopping: dict | None) -> list[str]:
    """The card's lines on the scoring path, near ties and the stopping rule (the LLM suite's ``scoring``
    and ``stopping``)."""
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


# ----- divergence along the base's own answers (--divergence-prompts, llm/answers.py) ------------------
SHOWN_CHARACTERS = 240  # of a prompt or an answer in the card's examples
MARKDOWN_PUNCTUATION = re.compile(r"([!-/:;=-@\[-`{-~])")  # ASCII punctuation but <: CommonMark escapes each


def add_divergence(section: dict, results: dict) -> None:
    """``section["divergence"]``: the compressed model along the base's own answers, when it was measured."""
    divergence = results["compressed"].get("divergence")
    if divergence is not None:
        section["divergence"] = divergence


def cell(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` as literal Markdown table text: at most ``limit`` characters (… after), line breaks shown as ⏎,
    every ASCII punctuation backslash-escaped and ``<`` written ``&lt;`` (no emphasis, link, tag or cell border
    from a model's words)."""
    text = text if len(text) <= limit else text[:limit] + "…"
    text = MARKDOWN_PUNCTUATION.sub(r"\\\1", text.replace("\r\n", "\n")).replace("<", "&lt;")
    return text.replace("\n", " ⏎ ") or "(nothing)"


def divergence_lines(d: dict | None) -> list[str]:
    """The card's "what it says" lines of the LLM suite's ``divergence``: KL, agreement, identical answers,
    first divergence, the entropy thirds and the prompts where the answers part."""
    if not d:
        return []
    p, n = d["prompt_set"], d["prompt_set"]["n"]
    kl, top1, same, first = d["kl"], d["top1_agreement"], d["identical"], d["first_divergence"]
    median = "–" if first["median"] is None else f"{first['median']:g}"
    prefixes = " / ".join(d["identical_first"])
    lines = ["", "### What it says: the compressed model along the base's own answers", "",
             f"The base answered {n} of the {p['size']} prompts of {cell(p['source'], 200)} greedily ("
             f"{'in its chat template' if p['chat_template'] else 'no chat template'}, at most {p['max_new_tokens']} "
             f"new tokens, {d['answer_tokens']:,} answer tokens); the compressed model was run teacher-forced on each "
             "prompt + the base's answer, one forward: where its argmax differs from the base's token first, its own "
             "greedy answer parts (Dutta et al. 2024).", "",
             "| measure | value |", "|---|---:|",
             f"| KL(base‖compressed) per answer token, nats | {kl_cell(kl)} |",
             f"| top-1 agreement (the compressed model's argmax is the base's token) | {pct_cell(top1)} |",
             f"| identical answers | {round(same['value'] * n)} of {n}: {pct_cell(same)} |",
             f"| first divergence: median answer position of the {first['parted']} that part | {median} |",
             f"| identical for the first {prefixes} tokens | "
             f"{' / '.join(str(v) for v in d['identical_first'].values())} of {n} |",
             "", f"Intervals: 95% bootstrap over prompts (the tokens of one answer are not independent). KL and top-1 "
             "agreement by the base's token entropy, in thirds of all answer tokens (Kirichenko et al. 2026 find the "
             "divergence of quantized models concentrated where the base is uncertain):", "",
             "| base's entropy | nats | tokens | KL | top-1 agreement |", "|---|---|---:|---:|---:|"]
    low, high = d["entropy_thirds"]["cuts_nats"]
    for name, span in (("low", f"≤ {low:.3f}"), ("middle", f"{low:.3f} … {high:.3f}"), ("high", f"> {high:.3f}")):
        t = d["entropy_thirds"][name]
        lines.append(f"| {name} | {span} | {t['kl']['tokens']:,} | {kl_cell(t['kl'])} | {pct_cell(t['top1_agreement'])} |")
    lines += [f"⚠ {w}" for w in d.get("warnings", [])]
    if d.get("examples"):
        lines += ["", "Where the answers part (from the first differing token; the compressed model's own greedy "
                      "answer, generated for these prompts only):", "",
                  "| prompt | position | both say | base goes on | compressed goes on |", "|---|---:|---|---|---|"]
        lines += [f"| {cell(e['prompt'])} | {e['position']} | {cell(e['shared'][-SHOWN_CHARACTERS:])} | "
                  f"{cell(e['base'])} | {cell(e['compressed'])} |" for e in d["examples"]]
    return lines


def kl_cell(entry: dict) -> str:
    if entry.get("value") is None:
        return "–"
    return f"{entry['value']:.4f} [{entry['low']:.4f}, {entry['high']:.4f}]"


def pct_cell(entry: dict) -> str:
    if entry.get("value") is None:
        return "–"
    return f"{100 * entry['value']:.1f}% [{100 * entry['low']:.1f}, {100 * entry['high']:.1f}]"
