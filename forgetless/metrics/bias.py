"""Relative bias of a compressed model, Du et al. (2023), eq. 1.

    gap     = (acc_dev − acc_adv) / acc_dev
    F_bias  = gap_compressed / gap_base

A task with several challenge sets pools them into one accuracy weighted by their sizes
(FEVER: Sym1 + Sym2, QQP: PAWS-wiki + PAWS-qqp). Accuracies may be fractions or percentages,
as long as both arguments of a call use the same scale.
"""
from __future__ import annotations

import math
from typing import Iterable

from ..errors import ConfigError


def pooled_accuracy(parts: Iterable[tuple[float, int]]) -> float:
    """Size-weighted accuracy of several sets given as ``(accuracy, n)`` pairs."""
    parts = list(parts)
    total = sum(n for _, n in parts)
    if not parts or total <= 0:
        raise ConfigError("pooled accuracy needs at least one non-empty set")
    if any(n < 0 for _, n in parts):
        raise ConfigError("set sizes must be non-negative")
    return sum(acc * n for acc, n in parts) / total


def relative_gap(acc_dev: float, acc_adv: float) -> float:
    """``(acc_dev − acc_adv) / acc_dev``: the share of in-distribution accuracy lost on the challenge set."""
    if acc_dev <= 0:
        raise ConfigError(f"dev accuracy must be positive to compute a relative gap, got {acc_dev}")
    return (acc_dev - acc_adv) / acc_dev


def f_bias(base_dev: float, base_adv: float, compressed_dev: float, compressed_adv: float) -> float:
    """F_bias = gap_compressed / gap_base (> 1: the compressed model relies more on shortcuts).

    Returns ``nan`` when the base model has no gap (gap_base == 0): the ratio is undefined then.
    """
    gap_base = relative_gap(base_dev, base_adv)
    gap_compressed = relative_gap(compressed_dev, compressed_adv)
    if gap_base == 0:
        return math.nan
    return gap_compressed / gap_base
