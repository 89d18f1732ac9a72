"""Which layers a shallower model keeps: one module for every method that drops whole layers
(``truncate``: Du et al. 2023's Truncated-l6 students; ``nash``: Ko et al. 2023's shallow decoder).

Strategies (0-based indices of the ``keep`` layers kept out of ``num_layers`` = L):

* ``first``  — layers 0 … keep−1 (Truncated-l6; NASH Table 3's "low");
* ``last``   — the top ``keep`` layers (NASH Table 3's "high");
* ``spread`` — evenly spread with both ends kept: ``round(i·(L−1)/(keep−1))`` for i = 0 … keep−1
  (Python's round, half to even): 3 of 6 → [0, 2, 5];
* ``stride`` — NASH §4.1's "uniform" selection: every ⌊(L−1)/(keep−1)⌋-th layer from the first,
  ``L_s = {⌊(L − 1)/(d_s − 1)⌋·ℓ + 1 | ℓ = 0 … d_s − 1}`` in the paper's 1-based notation:
  3 of 6 → [0, 2, 4].

``keep = 1`` keeps layer 0 for ``first``, ``spread`` and ``stride``. The name "uniform" is not
accepted: it meant ``spread`` in one place and ``stride`` in another.
"""
from __future__ import annotations

from ...errors import ConfigError

STRATEGIES = ("first", "last", "spread", "stride")


def check_strategy(strategy: str, option: str = "selection") -> None:
    if strategy == "uniform":
        raise ConfigError(f"{option} 'uniform' is ambiguous: use 'spread' (evenly spread, first and last kept) or "
                          "'stride' (NASH §4.1: every ⌊(L−1)/(d−1)⌋-th layer from the first)")
    if strategy not in STRATEGIES:
        raise ConfigError(f"unknown {option} {strategy!r}; choose from {', '.join(STRATEGIES)}")


def select_layers(num_layers: int, keep: int, strategy: str = "first") -> list[int]:
    """0-based indices of the ``keep`` layers chosen out of ``num_layers``."""
    check_strategy(strategy)
    if num_layers < 1:
        raise ConfigError(f"a stack needs at least one layer, got {num_layers}")
    if not 1 <= keep <= num_layers:
        raise ConfigError(f"cannot keep {keep} of {num_layers} layers: choose 1..{num_layers}")
    if keep == num_layers:
        return list(range(num_layers))
    if strategy == "first" or keep == 1 and strategy != "last":
        return list(range(keep))
    if strategy == "last":
        return list(range(num_layers - keep, num_layers))
    if strategy == "spread":
        return sorted({round(i * (num_layers - 1) / (keep - 1)) for i in range(keep)})
    step = (num_layers - 1) // (keep - 1)
    return [step * ell for ell in range(keep)]
