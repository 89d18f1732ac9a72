"""Warnings for numbers a report card shows but a reader should not trust.

Pure functions on plain numbers, dicts and lists: each returns one warning sentence, or None when
the check passes. Thresholds are the named constants below.
"""
from __future__ import annotations

from collections import Counter
from typing import Hashable, Iterable, Mapping

from ..errors import ConfigError

# A model whose accuracy is below chance (1/num_classes) or the majority-class share of the set
# plus this margin (5 accuracy points) has learnt little beyond guessing or always answering the
# most frequent class: gaps and F_bias computed from it describe noise.
CHANCE_MARGIN = 0.05
# A classifier predicting one class for more than this share of a set (90%) is (close to) a
# constant predictor: its accuracy is the share of that class, whatever the input.
SINGLE_CLASS_SHARE = 0.90
# A generation model whose distinct outputs are fewer than this share (10%) of its outputs on a
# set answers (nearly) the same text to every input: ROUGE / METEOR then reward a template.
MIN_DISTINCT_OUTPUT_SHARE = 0.10


def not_above(value: float, level: float, what: str, detail: str = "") -> str:
    """How ``value`` stands against the rule "at most ``level`` + ``CHANCE_MARGIN``", worded by what
    is tested: ``0.440 is at most 0.05 above chance (0.500): 0.060 below it``."""
    gap = value - level
    where = "at it" if abs(gap) < 5e-4 else f"{abs(gap):.3f} {'below' if gap < 0 else 'above'} it"
    return f"{value:.3f} is at most {CHANCE_MARGIN:.2f} above {what} ({level:.3f}{detail}): {where}"


# the phrase of the warnings that make a card's gaps and F_bias meaningless (honest.f_bias_meaningful)
VOIDS_F_BIAS = "its gaps and F_bias are not meaningful"


def near_chance(set_name: str, accuracy: float, num_classes: int, majority_share: float | None = None,
                role: str = "base") -> str | None:
    """Warn when ``accuracy`` is at most ``CHANCE_MARGIN`` above chance (``1/num_classes``) or the
    majority-class share of the set (when given)."""
    if num_classes < 2:
        raise ConfigError(f"num_classes must be >= 2 for a chance level, got {num_classes}")
    chance = 1.0 / num_classes
    if accuracy <= chance + CHANCE_MARGIN:
        return (f"{role} model on {set_name}: accuracy {not_above(accuracy, chance, 'chance', f' for {num_classes} classes')}"
                f"; {VOIDS_F_BIAS}")
    if majority_share is not None and accuracy <= majority_share + CHANCE_MARGIN:
        return (f"{role} model on {set_name}: accuracy {not_above(accuracy, majority_share, 'the majority-class share')}"
                f"; it may only predict the frequent class, and {VOIDS_F_BIAS}")
    return None


def below_chance(set_name: str, accuracy: float, num_classes: int, role: str = "base") -> str | None:
    """Warn when a model is below chance on a (challenge) set: the set was built to fool such models
    (AdvGLUE), so a compressed model drifting toward chance gains accuracy there and a lower F_bias is
    not more robustness."""
    chance = 1.0 / num_classes
    if accuracy >= chance - CHANCE_MARGIN:
        return None
    return (f"{role} model on {set_name}: accuracy {accuracy:.3f} is below chance ({chance:.3f}); a compressed model "
            "that drifts toward chance gains there, so a lower F_bias on it does not mean more robustness")


def gap_not_positive(base_gap: float | None, set_name: str = "challenge") -> str | None:
    """Warn when the base model's relative gap (Du et al. 2023, eq. 1) is ≤ 0 or undefined: the base
    is no worse on the challenge set than on dev, so F_bias = gap_c / gap_b is not meaningful."""
    if base_gap is None or base_gap != base_gap:  # None or NaN
        return f"relative gap of the base model on {set_name} is undefined; F_bias is not meaningful"
    if base_gap <= 0:
        return (f"relative gap of the base model on {set_name} is {base_gap:.3f} (≤ 0): the base is not worse "
                f"on the challenge set than on dev, so F_bias is not meaningful")
    return None


def predicted_shares(predictions: Iterable[Hashable]) -> dict:
    """Share of each predicted value among ``predictions``."""
    counts = Counter(predictions)
    total = sum(counts.values())
    return {label: count / total for label, count in counts.items()} if total else {}


def single_class(set_name: str, shares: Mapping[Hashable, float], role: str = "compressed") -> str | None:
    """Warn when one class takes more than ``SINGLE_CLASS_SHARE`` of the predictions on a set.
    ``shares`` maps predicted label → share (counts are accepted too and normalised)."""
    total = float(sum(shares.values()))
    if total <= 0:
        return None
    label, top = max(shares.items(), key=lambda item: item[1])
    if top / total > SINGLE_CLASS_SHARE:
        return (f"{role} model on {set_name}: predicts {label!r} for {top / total:.1%} of examples "
                f"(> {SINGLE_CLASS_SHARE:.0%}); its accuracy reflects the label distribution, not the input")
    return None


def near_constant_generation(set_name: str, outputs: list[str], role: str = "compressed") -> str | None:
    """Warn when the distinct generated outputs are fewer than ``MIN_DISTINCT_OUTPUT_SHARE`` of all
    outputs on a set (whitespace-normalised comparison)."""
    if not outputs:
        return None
    distinct = len({" ".join(str(text).split()) for text in outputs})
    share = distinct / len(outputs)
    if share < MIN_DISTINCT_OUTPUT_SHARE:
        return (f"{role} model on {set_name}: only {distinct} distinct outputs for {len(outputs)} inputs "
                f"({share:.1%} < {MIN_DISTINCT_OUTPUT_SHARE:.0%}); generation is near-constant")
    return None


def more_training_than_base(base_epochs: float, compressed_epochs: float) -> str | None:
    """Warn when the compressed model was trained for more epochs than the base: part of any gain
    may come from the extra training, not from the compression method."""
    if compressed_epochs > base_epochs:
        return (f"the compressed model was trained for {compressed_epochs:g} epochs, the base for {base_epochs:g}: "
                f"differences may come from the extra training")
    return None



# A calibration text counts as found in an evaluated text when it is at least this long (shorter ones,
# "Yes." or a title, recur by chance) and appears in it verbatim; a tenth of them found is a leak.
LEAK_MIN_CHARS = 40
LEAK_SHARE = 0.10


def calibration_leak(texts: list[str], evaluated: Mapping[str, str]) -> str | None:
    """Warn when the calibration ``texts`` of a one-shot method are (a tenth or more of them) in an
    ``evaluated`` text ({what: text}, e.g. WikiText-2 test, whose perplexity the suite reports): the
    compressed model was fitted to what it is then scored on, which flatters it."""
    long = [t.strip() for t in texts if len(t.strip()) >= LEAK_MIN_CHARS]
    for what, text in evaluated.items():
        found = sum(t in text for t in long)
        if long and found >= LEAK_SHARE * len(long):
            return (f"calibration: {found} of the {len(long)} calibration texts (of {LEAK_MIN_CHARS}+ characters) are in "
                    f"{what}, which this card evaluates: the compressed model was calibrated on the text it is scored "
                    "on, which flatters it; calibrate on text disjoint from it (e.g. the data folder's xsum)")
    return None
