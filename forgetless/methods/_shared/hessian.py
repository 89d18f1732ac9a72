"""Second-order statistics of a linear layer's inputs, as SparseGPT and GPTQ use them.

For a layer ``y = W x`` and the reconstruction loss ``‖W X − Ŵ X‖²_F`` over ``n`` calibration
tokens, the Hessian with respect to each output row of ``W`` is the same matrix

    H = 2 X Xᵀ / n                                  (Frantar et al. 2022, GPTQ, §3; eq. for H_F)

(``X``: in_features × n). Wanda's activation norm ``‖X_j‖₂`` is ``sqrt(n · H_jj / 2)``, so one
accumulator serves all three methods. Wanda needs only those norms: its accumulator
(``hessian_every`` > 1) sums ``x_j²`` over every token (in float32 within a batch, in float64 across
batches) and ``x xᵀ`` over every k-th
token only (a systematic sample spread over all texts and positions), enough for the reconstruction
error it reports at 1/k of the cost of the full matrix products. The damped inverse follows both papers: add
``λ = damp · mean(diag H)`` to the diagonal, then take the *upper* Cholesky factor ``U`` of
``H⁻¹`` (``H⁻¹ = Uᵀ U``): row ``i`` of ``U`` scaled by ``U_ii`` is row ``i`` of the inverse
Hessian of the columns not yet processed, which is what the column-by-column OBS updates need.
"""
from __future__ import annotations

from contextlib import contextmanager

import torch


class HessianAccumulator:
    """Running ``Σ x xᵀ`` over calibration tokens for one linear layer (float64 on the CPU): over
    every real token, or with ``hessian_every = k`` over every k-th one (``tokens`` counts them;
    those rows are kept, ``rows``) plus ``Σ x_j²`` over all of them (``column_norms``; each batch's
    float32 sum added in float64)."""

    def __init__(self, in_features: int, device: str | torch.device = "cpu", hessian_every: int = 1):
        if hessian_every < 1:
            raise ValueError(f"hessian_every must be >= 1, got {hessian_every}")
        self.sum = torch.zeros(in_features, in_features, dtype=torch.float64, device=device)
        self.every, self.tokens, self.seen = hessian_every, 0, 0
        self.squares = torch.zeros(in_features, dtype=torch.float64, device=device) if hessian_every > 1 else None
        self.sampled: list[torch.Tensor] = []  # hessian_every > 1: the kept rows of every batch
        # per input feature over every real token: the largest |x| (SmoothQuant, static input scales) and Σ|x| (AWQ)
        self.absmax = torch.zeros(in_features, dtype=torch.float32, device=device)
        self.abs_sum = torch.zeros(in_features, dtype=torch.float64, device=device)
        self._hessian: torch.Tensor | None = None

    @classmethod
    def identity(cls, in_features: int, device: str | torch.device = "cpu") -> "HessianAccumulator":
        """Statistics of uncorrelated unit inputs, ``H = I``: what a linear no calibration token reached
        (an expert the router never chose) is compressed on. Wanda and SparseGPT then prune by
        magnitude, GPTQ rounds to nearest (``gptq/solver.py``); the error reported is the weights' own."""
        accumulator = cls(in_features, device)
        accumulator.sum.diagonal().fill_(0.5)  # H = 2 · sum / tokens
        accumulator.tokens = 1
        return accumulator

    @property
    def reached(self) -> int:
        """Calibration tokens this linear saw (all of them, also where only every k-th is kept)."""
        return self.seen if self.squares is not None else self.tokens

    def add(self, inputs: torch.Tensor, token_mask: torch.Tensor | None = None) -> None:
        """Add the inputs of one batch (``… × in_features``); ``token_mask`` (``…``, bool) keeps
        only real tokens (padding contributes nothing)."""
        x = inputs.detach().reshape(-1, inputs.shape[-1])
        if token_mask is not None and not bool(token_mask.all()):  # no copy when every token is real
            x = x[token_mask.reshape(-1).to(x.device)]
        if x.dtype not in (torch.float32, torch.float64):
            x = x.float()
        self._hessian = None
        magnitudes = x.abs()
        self.absmax = torch.maximum(self.absmax, magnitudes.amax(dim=0).float()) if len(x) else self.absmax
        self.abs_sum += magnitudes.sum(dim=0)
        if self.squares is None:
            self.sum.add_(x.T @ x)  # one batch in the activations' precision, summed in float64
            self.tokens += x.shape[0]
            return
        # one batch's squares summed in float32 (a reduction with a float64 cast is 4× slower on CPU), batches
        # summed in float64
        self.squares += torch.sum(x * x, dim=0)
        kept = x[(-self.seen) % self.every::self.every]  # the tokens whose index in the whole set is a multiple of k
        self.sampled.append(kept.clone())
        self.seen += x.shape[0]
        self.tokens += kept.shape[0]

    @property
    def abs_mean(self) -> torch.Tensor:
        """The mean ``|x_j|`` over every real token (AWQ's activation magnitude ``s_X``)."""
        return self.abs_sum / max(self.seen if self.squares is not None else self.tokens, 1)

    @property
    def rows(self) -> torch.Tensor:
        """The kept tokens' inputs (``tokens × in_features``; ``hessian_every`` > 1 only)."""
        if len(self.sampled) != 1:
            self.sampled = [torch.cat(self.sampled)]
        return self.sampled[0]

    @property
    def hessian(self) -> torch.Tensor:
        """``H = 2XXᵀ/n`` over the tokens summed (all, or every k-th); computed once."""
        if self.tokens == 0:
            raise ValueError("no calibration tokens reached this layer")
        if self._hessian is None:
            total = self.sum if self.squares is None else self.sum + self.rows.T @ self.rows
            self._hessian = 2.0 * total / self.tokens
        return self._hessian

    def column_norms(self) -> torch.Tensor:
        """``‖X_j‖₂`` over every real token for every input feature ``j`` (Wanda's activation term)."""
        squares = self.sum.diagonal() if self.squares is None else self.squares
        return squares.clamp_min(0).sqrt()

    def relative_error(self, weight: torch.Tensor, compressed: torch.Tensor) -> float:
        """``‖W X − Ŵ X‖_F / ‖W X‖_F`` over the accumulated tokens: through ``H``
        (``relative_reconstruction_error``), or straight from the kept rows where there are fewer of
        them than inputs (the same number, fewer operations)."""
        if self.squares is None or self.tokens >= self.sum.shape[0]:
            return relative_reconstruction_error(weight, compressed, self.hessian)
        dtype = error_dtype(weight)
        x = self.rows.T.to(dtype)
        w = weight.detach().to(dtype)
        reference = (w @ x).square().sum()
        if reference == 0:
            return 0.0
        return float(((w - compressed.detach().to(dtype)) @ x).square().sum().div(reference).sqrt())


def prepare_hessian(hessian: torch.Tensor, weight: torch.Tensor, damp: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Dead inputs (``H_jj = 0``: the feature is always zero) get ``H_jj = 1`` and their weights
    are zeroed (they cannot matter); then ``λ = damp · mean(diag H)`` is added to the diagonal.
    Returns the damped Hessian and the weight (float64 copies)."""
    h = hessian.to(torch.float64).clone()
    w = weight.detach().to(torch.float64).clone()
    dead = h.diagonal() == 0
    h[dead, dead] = 1.0
    w[:, dead] = 0.0
    h.diagonal().add_(damp * h.diagonal().mean())
    return h, w


@contextmanager
def one_thread():
    """The column-by-column sweeps (thousands of small vector operations) in one intra-op thread:
    on this 2-core machine under load, two spinning OpenMP threads made GPTQ on a 1536 × 576 layer
    13.5 s instead of 0.47 s. The thread count is restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def inverse_cholesky_upper(hessian: torch.Tensor) -> torch.Tensor:
    """The upper Cholesky factor ``U`` of ``H⁻¹`` (``H⁻¹ = Uᵀ U``); ``H`` must be positive definite
    (damp it first). Two ``in × in`` float64 matrices at a time besides ``H``: the lower factor is freed
    before the last factorisation (GPTQ's and SparseGPT's peak at a 8,960-wide MLP projection)."""
    inverse = torch.cholesky_inverse(torch.linalg.cholesky(hessian))
    return torch.linalg.cholesky(inverse, upper=True)


def relative_reconstruction_error(weight: torch.Tensor, compressed: torch.Tensor, hessian: torch.Tensor) -> float:
    """``‖W X − Ŵ X‖_F / ‖W X‖_F`` from the (undamped) Hessian alone:
    ``‖ΔW X‖²_F = tr(ΔW X Xᵀ ΔWᵀ) ∝ tr(ΔW H ΔWᵀ)`` (the factor 2/n cancels in the ratio). Computed
    in the weight's precision (``error_dtype``)."""
    dtype = error_dtype(weight)
    h = hessian.to(dtype)
    w = weight.detach().to(dtype)
    delta = w - compressed.detach().to(dtype)
    reference = ((w @ h) * w).sum().clamp_min(0)
    if reference == 0:
        return 0.0
    return float((((delta @ h) * delta).sum().clamp_min(0) / reference).sqrt())


def error_dtype(weight: torch.Tensor) -> torch.dtype:
    """The precision of a reported reconstruction error: the weight's own, at least float32. The
    error is a figure for the card, not an input of the solves (those stay in float64): in float32
    its two ``out × in × in`` products cost half as much (about 15% of GPTQ's CPU time on SmolLM2
    in float64) and agree to about 6 digits."""
    return torch.promote_types(weight.dtype, torch.float32)
