"""Spending a byte budget over units, exactly: the multiple-choice knapsack

    minimise Σ_u value[u][choice_u]   subject to   Σ_u cost[u][choice_u] ≤ budget

(one choice per unit; ``cost``: bytes as stored, ``value``: the unit's KL at that format, ``budget.py``),
solved by dynamic programming over the units on the Pareto frontier of (bytes, summed value): after unit
``u`` the frontier holds, for every reachable total of bytes within the budget, the least summed value, minus
the totals a smaller one already beats. A state dropped is dominated by one kept (no more bytes, no more
value), and every completion of the dropped state is then dominated by the same completion of the kept
one, so the optimum survives: the answer is exact (no rounding of bytes, unlike a DP over byte bins, and
unlike a greedy by value per byte, which can stop at a worse corner: ``tests/methods/test_budget.py``).
A choice ``None`` (a format that does not fit the unit) is never taken. Among equal sums the fewest bytes
win; the same input gives the same choice (stable sorts). numpy only.
"""
from __future__ import annotations

import numpy as np


def allocate(costs: list[list[int | None]], values: list[list[float]], budget: int) -> list[int]:
    """The optimal choice index per unit (module docstring); ``ValueError`` when nothing fits ``budget``."""
    total = np.zeros(1, dtype=np.int64)
    value = np.zeros(1)
    back: list[tuple[np.ndarray, np.ndarray]] = []  # per unit: (parent state, choice) of each frontier state
    for unit_costs, unit_values in zip(costs, values):
        options = [(i, c, v) for i, (c, v) in enumerate(zip(unit_costs, unit_values)) if c is not None]
        totals = np.concatenate([total + c for _, c, _ in options])
        sums = np.concatenate([value + v for _, _, v in options])
        parents = np.concatenate([np.arange(len(total)) for _ in options])
        choices = np.concatenate([np.full(len(total), i) for i, _, _ in options])
        within = totals <= budget
        totals, sums, parents, choices = totals[within], sums[within], parents[within], choices[within]
        if not len(totals):
            raise ValueError(f"no assignment fits {budget} bytes")
        order = np.lexsort((choices, parents, sums, totals))
        totals, sums, parents, choices = totals[order], sums[order], parents[order], choices[order]
        best_before = np.concatenate([[np.inf], np.minimum.accumulate(sums)[:-1]])
        frontier = sums < best_before  # strictly better than every state with no more bytes
        total, value = totals[frontier], sums[frontier]
        back.append((parents[frontier], choices[frontier]))
    state = int(np.argmin(value))  # the first of the least: fewest bytes among equal values
    picked = []
    for parents, choices in reversed(back):
        picked.append(int(choices[state]))
        state = int(parents[state])
    return picked[::-1]
