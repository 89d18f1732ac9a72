"""Two engines' greedy answers to one prompt compared token by token (pure logic, no model).

Both engines get the same prompt token ids; each answer is the list of token ids it generated (the
end-of-sequence token included where it stopped). The answers are identical, or they part at one
position: there each engine's own log-probabilities say how far apart the two tokens were. A gap of a
few hundredths of a nat is a near tie that rounding (bf16 against float32, another kernel's order of
sums) flips; a gap of nats is a different model: wrong weights, a wrong kernel, a wrong scale.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

NEAR_TIE_NATS = 0.1  # a gap below this is a near tie at the precision a serving engine computes in


def first_difference(ours: Sequence[int], served: Sequence[int]) -> int | None:
    """The first position where the two answers differ (one answer ending earlier counts), None when
    they are the same token for token."""
    for index, (a, b) in enumerate(zip(ours, served)):
        if a != b:
            return index
    return None if len(ours) == len(served) else min(len(ours), len(served))


def log_prob_gap(log_probs: Mapping[int, float] | None, preferred: int | None, other: int | None) -> float | None:
    """``log p(preferred) − log p(other)`` under one engine's distribution at a position (``log_probs``:
    token id → log-probability; an engine that returns its top-k only may lack ``other``): None where
    a token is missing (an answer that ended, or a token outside the top-k)."""
    if log_probs is None or preferred is None or other is None:
        return None
    if preferred not in log_probs or other not in log_probs:
        return None
    return float(log_probs[preferred]) - float(log_probs[other])


def compare_answers(prompt: str, ours: Sequence[int], served: Sequence[int],
                    our_log_probs: Callable[[int], Mapping[int, float]],
                    served_log_probs: Sequence[Mapping[int, float]] | None,
                    decode: Callable[[Sequence[int]], str]) -> dict:
    """One prompt's entry: both texts and whether they are identical; where not, the first differing
    position, each engine's token there and the log-probability gaps: ``gap_ours`` (forgetless's model:
    log p(its token) − log p(the served token), ≥ 0 for a greedy answer) and ``gap_served`` (the serving
    engine's: log p(its token) − log p(forgetless's token), when it returned that token's log-probability).
    ``our_log_probs(position)`` gives forgetless's distribution at a position of the common prefix;
    ``served_log_probs[position]`` the serving engine's (top-k)."""
    entry = {"prompt": prompt, "ours": decode(ours), "served": decode(served), "identical": list(ours) == list(served),
             "tokens": {"ours": len(ours), "served": len(served)}}
    index = first_difference(ours, served)
    if index is None:
        return entry
    mine = ours[index] if index < len(ours) else None
    theirs = served[index] if index < len(served) else None
    at_served = served_log_probs[index] if served_log_probs is not None and index < len(served_log_probs) else None
    gap_ours = log_prob_gap(our_log_probs(index), mine, theirs)
    entry["first_difference"] = {
        "position": index, "common_prefix": decode(ours[:index]),
        "ours": _token(mine, decode), "served": _token(theirs, decode),
        "gap_ours": gap_ours, "gap_served": log_prob_gap(at_served, theirs, mine),
        "near_tie": gap_ours is not None and abs(gap_ours) < NEAR_TIE_NATS}
    return entry


def _token(token: int | None, decode: Callable[[Sequence[int]], str]) -> dict | None:
    """A token as an id and its text (None: the answer had ended)."""
    return None if token is None else {"id": int(token), "text": decode([token])}


def summary(entries: list[dict]) -> dict:
    """How many answers were identical, how many parted at a near tie, and the largest gap."""
    parted = [e["first_difference"] for e in entries if not e["identical"]]
    gaps = [abs(d["gap_ours"]) for d in parted if d["gap_ours"] is not None]
    return {"prompts": len(entries), "identical": len(entries) - len(parted),
            "near_ties": sum(1 for d in parted if d["near_tie"]),
            "largest_gap_ours": max(gaps) if gaps else None}


def verdict(result: dict) -> str:
    """One line: what the check found (``result``: ``check.serve_check``'s)."""
    if not result.get("served"):
        return f"not served: {result['why']}"
    s = result["summary"]
    if s["identical"] == s["prompts"]:
        return f"served; greedy answers identical on {s['prompts']} of {s['prompts']} prompts"
    others = s["prompts"] - s["identical"]
    largest = f"; largest gap {s['largest_gap_ours']:.3f} nats" if s["largest_gap_ours"] is not None else ""
    return (f"served; greedy answers identical on {s['identical']} of {s['prompts']} prompts, {others} part "
            f"({s['near_ties']} at a near tie below {NEAR_TIE_NATS} nats{largest})")
