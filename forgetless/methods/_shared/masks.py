"""Keep-masks from per-weight scores: per output row (unstructured) or N:M semi-structured.

N:M sparsity (Mishra et al. 2021, "Accelerating Sparse Deep Neural Networks"; NVIDIA's 2:4) keeps
exactly ``n`` of every ``m`` consecutive weights along the input dimension of each output row;
Wanda (Sun et al. 2023, §3) and SparseGPT (Frantar & Alistarh 2023, §3.4) select them by their own
score. Ties are broken by position (the lower index is kept), so a mask is a function of the
scores alone.

The check of a pruned weight (``nm_check``) tells "exactly n of every m" from "at most n": groups
whose base weights were already zero keep fewer than n non-zeros, which no mask can avoid.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch


def row_keep_mask(scores: torch.Tensor, sparsity: float) -> torch.Tensor:
    """Zero the ``round(sparsity · in_features)`` lowest-scoring weights of every output row."""
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    rows, cols = scores.shape
    kept = cols - int(round(sparsity * cols))
    order = torch.sort(-scores, dim=1, stable=True).indices  # descending; equal scores: lower index first
    mask = torch.zeros_like(scores, dtype=torch.bool)
    mask.scatter_(1, order[:, :kept], True)
    return mask


def nm_keep_mask(scores: torch.Tensor, n: int, m: int) -> torch.Tensor:
    """Keep the ``n`` highest-scoring of every ``m`` consecutive weights along dim 1."""
    if not 0 < n < m:
        raise ValueError(f"N:M sparsity needs 0 < N < M, got {n}:{m}")
    rows, cols = scores.shape
    if cols % m:
        raise ValueError(f"N:M sparsity needs the input width ({cols}) to be a multiple of M = {m}")
    groups = scores.reshape(rows, cols // m, m)
    # sort descending, stable on the position so that equal scores keep the lower index
    order = torch.sort(-groups, dim=2, stable=True).indices
    mask = torch.zeros_like(groups, dtype=torch.bool)
    mask.scatter_(2, order[..., :n], True)
    return mask.reshape(rows, cols)


def nm_nonzeros(weight: torch.Tensor, m: int) -> torch.Tensor:
    """Non-zero weights in every group of ``m`` consecutive inputs of every row (``out × in/m``)."""
    rows, cols = weight.shape
    if cols % m:
        raise ValueError(f"N:M needs the input width ({cols}) to be a multiple of M = {m}")
    return (weight.reshape(rows, cols // m, m) != 0).sum(dim=2)


@dataclass(frozen=True)
class NmCheck:
    """How the groups of ``m`` consecutive inputs of a weight (or of several: ``+``) meet N:M.

    ``exactly_n``: groups with exactly ``n`` non-zeros (the pattern); ``fewer_than_n``: with fewer,
    of which ``fewer_base_zero`` had fewer than ``n`` non-zeros before pruning (the base weights
    were already zero there: no mask could keep ``n``); ``more_than_n``: the pattern is broken."""

    n: int
    m: int
    groups: int = 0
    exactly_n: int = 0
    fewer_than_n: int = 0
    fewer_base_zero: int = 0
    more_than_n: int = 0

    @property
    def at_most_n(self) -> bool:
        """No group has more than ``n`` non-zeros (what sparse kernels need)."""
        return self.more_than_n == 0

    @property
    def exact(self) -> bool:
        """Every group has exactly ``n`` non-zeros."""
        return self.exactly_n == self.groups

    def __add__(self, other: NmCheck) -> NmCheck:
        if (self.n, self.m) != (other.n, other.m):
            raise ValueError(f"cannot add a {other.n}:{other.m} check to a {self.n}:{self.m} one")
        return NmCheck(self.n, self.m, *(getattr(self, k) + getattr(other, k) for k in
                                         ("groups", "exactly_n", "fewer_than_n", "fewer_base_zero", "more_than_n")))

    def as_dict(self) -> dict:
        return {"pattern": f"{self.n}:{self.m}", "groups": self.groups, "exactly_n": self.exactly_n,
                "fewer_than_n": self.fewer_than_n, "fewer_base_zero": self.fewer_base_zero,
                "more_than_n": self.more_than_n, "at_most_n": self.at_most_n, "exact": self.exact}


def nm_check(weight: torch.Tensor, n: int, m: int, base_short: torch.Tensor | None = None) -> NmCheck:
    """The N:M check of ``weight``; ``base_short`` (bool, ``out × in/m``: the groups that had fewer
    than ``n`` non-zeros before pruning, ``nm_nonzeros(base, m) < n``; None: no such group) tells
    which groups with fewer than ``n`` non-zeros were short already."""
    kept = nm_nonzeros(weight, m)
    fewer = kept < n
    return NmCheck(n, m, groups=kept.numel(), exactly_n=int((kept == n).sum()), fewer_than_n=int(fewer.sum()),
                   fewer_base_zero=int((fewer & base_short).sum()) if base_short is not None else 0,
                   more_than_n=int((kept > n).sum()))
