"""Anytime-valid confidence sequences for the mean of bounded values: intervals that hold at every
sample size at once, so a run may look after every item and stop when the interval is narrow enough
(``--until-interval``, ``kinds/stopping.py``) without breaking their coverage (a bootstrap interval
computed at a data-dependent stopping time does not keep its level).

The predictable plug-in empirical-Bernstein confidence sequence (PrPl-EB) of Waudby-Smith & Ramdas,
"Estimating means of bounded random variables by betting", JRSS-B 86(1), 2024, Theorem 2, for X_1,
X_2, … in [0, 1]: with ψ_E(λ) = (−log(1 − λ) − λ) / 4, v_i = 4 (X_i − μ̂_{i−1})², μ̂_t = (½ + Σ_{i≤t}
X_i) / (t + 1), σ̂²_t = (¼ + Σ_{i≤t} (X_i − μ̂_i)²) / (t + 1) and the predictable bets
λ_t = min(√(2 log(2/α) / (σ̂²_{t−1} t log(1 + t))), ½), the lower bound L_t is the smallest mean m
not rejected by Σ_{i≤t} λ_i (X_i − μ_i(m)) − v_i ψ_E(λ_i) ≥ log(2/α), μ_i(m) the conditional mean of X_i
under m; the upper bound is 1 − (the lower bound of 1 − X).

* i.i.d. values (a mean μ): μ_i = m, w_i = 1, so L_t = (Σ λ_i X_i − log(2/α) − Σ v_i ψ_E(λ_i)) / Σ λ_i.
* drawn **without replacement** from N values of mean μ (a task's items in a seeded random order):
  the conditional mean is μ_i = (N m − S_{i−1}) / (N − i + 1), S_i = X_1 + … + X_i (Waudby-Smith &
  Ramdas, "Confidence sequences for sampling without replacement", NeurIPS 2020, §3), so
  L_t = (Σ λ_i (X_i + S_{i−1}/(N − i + 1)) − log(2/α) − Σ v_i ψ_E(λ_i)) / Σ λ_i N / (N − i + 1),
  intersected with what the unseen values allow: S_t / N ≤ μ ≤ (S_t + N − t) / N (exact at t = N).

Each bound is the running maximum (minimum) over t: the intersection of valid intervals is valid.
Coverage is checked by simulation in ``tests/metrics/test_sequences.py``.
"""
from __future__ import annotations

import numpy as np

from ..errors import ConfigError

METHOD = ("predictable plug-in empirical-Bernstein confidence sequence (Waudby-Smith & Ramdas 2024, Thm 2; "
          "without replacement: Waudby-Smith & Ramdas 2020), anytime-valid")
BET_CAP = 0.5


def confidence_sequence(values, confidence: float = 0.95, population: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: at every t the interval for the mean of ``values`` (in [0, 1], in the order
    drawn) after t of them, holding at all t at once with probability ``confidence``; ``population``:
    drawn without replacement from that many values (their mean is then the target), else i.i.d."""
    x = _checked(values, confidence, population)
    return _lower(x, confidence, population), 1.0 - _lower(1.0 - x, confidence, population)


def paired_sequence(differences, confidence: float = 0.95, population: int | None = None) -> dict:
    """``{value, low, high, width, n}`` at the last t for the mean of paired differences in [-1, 1]
    (e.g. compressed − base correct, per item): the sequence of ``(d + 1) / 2``, mapped back."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or d.size == 0 or np.any(np.abs(d) > 1):
        raise ConfigError(f"confidence sequence: paired differences must be a non-empty list in [-1, 1], got {d!r}")
    low, high = confidence_sequence((d + 1) / 2, confidence, population)
    low, high = 2 * low[-1] - 1, 2 * high[-1] - 1
    return {"value": float(d.mean()), "low": float(low), "high": float(high), "width": float(high - low),
            "n": int(d.size)}


def _lower(x: np.ndarray, confidence: float, population: int | None) -> np.ndarray:
    """The running maximum of L_t (module docstring) for values ``x`` in [0, 1]."""
    t = np.arange(1, x.size + 1, dtype=float)
    log_term = np.log(2 / (1 - confidence))
    centres = (0.5 + np.cumsum(x)) / (t + 1)  # μ̂_t
    variance = (0.25 + np.cumsum((x - centres) ** 2)) / (t + 1)  # σ̂²_t
    before = np.concatenate([[0.5], centres[:-1]])  # μ̂_{t−1}
    spread = np.concatenate([[0.25], variance[:-1]])  # σ̂²_{t−1}
    bets = np.minimum(np.sqrt(2 * log_term / (spread * t * np.log1p(t))), BET_CAP)
    penalty = np.cumsum(4 * (x - before) ** 2 * (-np.log1p(-bets) - bets) / 4)
    sums = np.cumsum(x)
    if population is None:
        low = (np.cumsum(bets * x) - log_term - penalty) / np.cumsum(bets)
    else:
        left = population - t + 1  # N − i + 1
        previous = np.concatenate([[0.0], sums[:-1]])  # S_{i−1}
        low = (np.cumsum(bets * (x + previous / left)) - log_term - penalty) / np.cumsum(bets * population / left)
        low = np.maximum(low, sums / population)  # the unseen values are at least 0
    return np.clip(np.maximum.accumulate(low), 0.0, 1.0)


def _checked(values, confidence: float, population: int | None) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or x.size == 0 or not np.all((x >= 0) & (x <= 1)):
        raise ConfigError("confidence sequence: values must be a non-empty list in [0, 1]")
    if not 0 < confidence < 1:
        raise ConfigError(f"confidence sequence: confidence must be in (0, 1), got {confidence}")
    if population is not None and population < x.size:
        raise ConfigError(f"confidence sequence: {x.size} values drawn without replacement from {population}")
    return x
