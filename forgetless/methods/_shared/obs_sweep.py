"""The column-by-column Optimal Brain Surgeon sweep shared by SparseGPT (Frantar & Alistarh 2023,
Algorithm 1) and GPTQ (Frantar et al. 2022, Algorithm 1); what differs is how a column is *fixed*
(pruned or rounded to a grid), given by a ``ColumnRule``.

Left to right, column ``j`` is fixed to ``ŵ_j`` and its error is spread over the columns not yet
fixed (``F``: from ``j`` on), with ``U`` the upper Cholesky factor of the damped ``H⁻¹``
(``hessian.inverse_cholesky_upper``; ``[H_F⁻¹]_{j,F} = U_jj · U_{j,F}``):

    δ = (w_j − ŵ_j) / U_jj,     W[:, F] −= δ · U_{j,F}               (SparseGPT eq. 3, GPTQ eq. 2-3)

Updates are lazy (GPTQ "Step 2", SparseGPT §3.3): inside a block of ``block_size`` columns they are
applied column by column, and the block's errors reach the later columns in one matrix product.

The sweep works on the *transposed* weight (``in × out``), so a column is a contiguous row of
memory: the same operations element for element as on ``out × in`` (the in-block update multiplies
and subtracts the same numbers), only the block-to-rest product may sum in another order. Rows are
independent of each other, so the rows of several linears that share one Hessian (q / k / v,
gate / up) are swept together: one Cholesky factor and one pass instead of one per linear.
"""
from __future__ import annotations

from typing import Protocol

import torch


class ColumnRule(Protocol):
    """How the sweep fixes columns (``weight_t``: the transposed weight being swept, ``in × out``)."""

    def start_block(self, start: int, end: int, weight_t: torch.Tensor) -> None:
        """Called before columns ``start:end`` are swept (their values updated by all earlier blocks)."""

    def fix(self, index: int, column: torch.Tensor, weight_t: torch.Tensor) -> torch.Tensor:
        """The fixed value of column ``index`` (``column``: its current value, ``out``)."""


def obs_sweep(weight_t: torch.Tensor, upper: torch.Tensor, block_size: int, rule: ColumnRule) -> None:
    """Sweep ``weight_t`` (``in × out``, float64, changed in place: every column ends at its fixed
    value) with the upper Cholesky factor ``upper`` of the damped inverse Hessian (``in × in``)."""
    columns = weight_t.shape[0]
    for start in range(0, columns, block_size):
        end = min(start + block_size, columns)
        rule.start_block(start, end, weight_t)
        block = weight_t[start:end]  # a view: the sweep writes into weight_t
        u_block = upper[start:end, start:end]
        errors = torch.empty_like(block)
        for j in range(end - start):
            column = block[j]
            fixed = rule.fix(start + j, column, weight_t)
            error = (column - fixed) / u_block[j, j]
            block[j:] -= torch.outer(u_block[j, j:], error)
            block[j] = fixed
            errors[j] = error
        if end < columns:
            weight_t[end:] -= upper[start:end, end:].T @ errors


def row_segments(sizes: list[int]) -> list[slice]:
    """Row ranges of linears stacked one above the other (``sizes``: their output widths)."""
    bounds = [0]
    for size in sizes:
        bounds.append(bounds[-1] + size)
    return [slice(a, b) for a, b in zip(bounds, bounds[1:])]
