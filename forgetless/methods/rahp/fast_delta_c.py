"""Fast ΔC for RAHP head scoring ("Robustness-Aware Head Pruning for certified Transformer
models", eq. 1-2 and 5): three ways to obtain ``ΔC_h = E_x[C(x, M∖h) − C(x, M)]`` with
``C(x, M) = g / (‖∇_x g‖₂ + ε)`` (g the logit margin, ∇_x w.r.t. the input embeddings).

* ``exact``       — one masked forward+backward per head (``model_scoring.delta_c_scores``).
* ``first-order`` — ``ΔC_h ≈ −E_x ∂C(x, ξ)/∂ξ_h`` at ξ = 1 (ξ_h the head's gate; removing the head
  is ξ_h: 1 → 0, so the first-order Taylor term of ``C(ξ − e_h) − C(ξ)`` is ``−∂C/∂ξ_h``). C contains
  a gradient norm, so this is a double backward: one forward, one backward with ``create_graph``
  for ``∇_x g``, one backward of ``Σ_x C`` to the per-example gates; all heads at once. Needs eager
  attention (CPU sdpa has no double backward): the model is switched to ``eager`` for the
  computation and switched back afterwards.
* ``hybrid``      — first-order for every head, then EXACT ΔC for the heads that decide the cut of
  RAHP's selection (see ``hybrid_delta_c``): the ``2·w`` unprotected heads ranked nearest the cut
  ``K = ⌊ρ·L·H⌋`` by the composite score ``S = β·ΔC' − α·I'`` (eq. 5) and the ``e`` lowest and
  ``e`` highest ΔC, whose extremes fix the min-max normalisation of ΔC' (a wrong range rescales
  ΔC' against I' for every head and flips near-ties at the cut). Iterated until the set is
  stable. Everything else keeps its first-order value. Guaranteed: those heads' ΔC (and, when the
  extremes are exact, their S) equal exact mode's. Not guaranteed: exact mode's pruned set — a head
  whose first-order ΔC ranks it outside the window may belong across the cut (tiny BERTs: the same
  set in 5 of 24 cases, 1-5 heads swapped otherwise; window 12 / extremes 4: 0-1 swapped).

Pure math first (window, merge), model glue after.
"""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator, Sequence

import torch
from torch import nn

from ...errors import ConfigError, UnsupportedModelError
from ...models.adapters import get_adapter
from ...metrics.predict import scoring_mode
from .model_scoring import ExampleHeadGates, _device, _inputs, delta_c_scores
from .scores import count_from_ratio, margin, per_example_norm, rahp_select, robustness_ratio


# ----- pure math -----------------------------------------------------------------------------------
def boundary_window(score: torch.Tensor, protected: torch.Tensor, k: int, width: int) -> torch.Tensor:
    """Bool mask of the unprotected heads whose rank by ``score`` (descending, ties: lower index
    first, as ``select_top_k``) lies in ``[k − width, k + width)``: the ``width`` last pruned and
    the ``width`` first kept heads of RAHP's top-K cut."""
    if width < 0:
        raise ConfigError(f"hybrid window must be >= 0, got {width}")
    candidates = [i for i in range(score.numel()) if not bool(protected[i])]
    order = sorted(candidates, key=lambda i: (-float(score[i]), i))
    mask = torch.zeros(score.numel(), dtype=torch.bool)
    mask[order[max(0, k - width):k + width]] = True
    return mask


def merge_exact(estimate: torch.Tensor, exact: dict[int, float]) -> torch.Tensor:
    """``estimate`` with the entries in ``exact`` (head index → exact value) substituted."""
    out = estimate.clone().float()
    for head, value in exact.items():
        out[head] = value
    return out


def heads_to_compute(delta_c: torch.Tensor, fisher: torch.Tensor, ratio: float, alpha: float, beta: float,
                     gamma: float, width: int, eps: float = 1e-8, extremes: int = 1) -> torch.Tensor:
    """Heads whose ΔC must be exact for RAHP's decision at ``delta_c``: the boundary window of the
    composite score S (eq. 5) around ``K = ⌊ρ·n⌋`` and the ``extremes`` lowest and highest ΔC
    (the minimum and maximum set the scale of the min-max normalised ΔC', hence the weight of ΔC
    against Fisher in S; more than one per end because the first-order ranking of the extremes
    can be off by a place or two)."""
    if extremes < 1:
        raise ConfigError(f"extremes must be >= 1, got {extremes}")
    picked = rahp_select(delta_c, fisher, ratio, alpha, beta, gamma, eps)
    need = boundary_window(picked["score"], picked["protected"], count_from_ratio(ratio, fisher.numel()), width)
    order = sorted(range(delta_c.numel()), key=lambda i: (float(delta_c[i]), i))
    need[order[:extremes] + order[-extremes:]] = True
    return need


def refine_near_cut(first_order: torch.Tensor, fisher: torch.Tensor, ratio: float, alpha: float, beta: float,
                    gamma: float, window: int, exact_fn: Callable[[list[int]], dict[int, float]],
                    eps: float = 1e-8, extremes: int = 1) -> dict:
    """The hybrid fixed point, with ``exact_fn(heads) → {head: exact ΔC}`` supplying exact values.

    Repeat: ``ΔC`` = ``first_order`` with the exact values obtained so far substituted; ask
    ``exact_fn`` for the heads of ``heads_to_compute(ΔC, …)`` that are not exact yet; stop when
    none is new. Returns ``delta_c`` (mixed), ``exact`` (head → value) and ``iterations`` (a negative
    ``window`` fails in ``boundary_window`` before ``exact_fn`` is called)."""
    exact: dict[int, float] = {}
    iterations = 0
    while True:
        mixed = merge_exact(first_order, exact)
        need = heads_to_compute(mixed, fisher, ratio, alpha, beta, gamma, window, eps, extremes)
        new = [i for i in need.nonzero().flatten().tolist() if i not in exact]
        if not new:
            return {"delta_c": mixed, "exact": exact, "iterations": iterations}
        exact.update(exact_fn(new))
        iterations += 1


# ----- model glue ------------------------------------------------------------------------------------
@contextlib.contextmanager
def eager_attention(model: nn.Module) -> Iterator[None]:
    """Run the block with ``attn_implementation="eager"`` (double backward needs it), restoring
    the model's previous implementation afterwards."""
    config = getattr(model, "config", None)
    previous = getattr(config, "_attn_implementation", None)
    if previous == "eager":
        yield
        return
    if not hasattr(model, "set_attn_implementation"):
        raise UnsupportedModelError(f"{type(model).__name__} cannot switch to eager attention, which first-order "
                                    "ΔC needs: use delta_c_mode 'exact'")
    model.set_attn_implementation("eager")
    if model.config._attn_implementation != "eager":
        raise UnsupportedModelError(f"{type(model).__name__} did not switch to eager attention, which first-order "
                                    "ΔC needs: use delta_c_mode 'exact'")
    try:
        yield
    finally:
        if previous is None:
            model.config._attn_implementation_internal = None
        else:
            model.set_attn_implementation(previous)


def _wide(logits: torch.Tensor) -> torch.Tensor:
    """float32 at least (float64 stays float64, for finite-difference checks)."""
    return logits if logits.dtype == torch.float64 else logits.float()


def gated_c_and_gate_grads(model: nn.Module, batch: dict, gates: ExampleHeadGates,
                           eps: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor]:
    """``C(x, M)`` (RAHP eq. 1) per example and ``∂C(x, ξ)/∂ξ`` at ξ = 1 per example and head,
    shape (examples, heads), by double backpropagation. Rows never interact and every row has its
    own gates, so one backward of ``Σ_x C`` yields every example's own gate gradient. The model
    must use eager attention and be in scoring mode (eval, frozen weights)."""
    device = _device(model)
    inputs = _inputs(batch, device)
    b = inputs["input_ids"].shape[0]
    embeds = model.get_input_embeddings()(inputs.pop("input_ids")).detach().requires_grad_(True)
    values = torch.ones(b, gates.layout.total, device=device, dtype=embeds.dtype, requires_grad=True)
    gates.values = values
    try:
        logits = _wide(get_adapter(model).logits_from_embeds(model, embeds, inputs))
        g = margin(logits, batch["labels"].to(device))
        (grad_x,) = torch.autograd.grad(g.sum(), embeds, create_graph=True)
        c = robustness_ratio(g, per_example_norm(grad_x), eps=eps)
        (grad_gates,) = torch.autograd.grad(c.sum(), values)
    finally:
        gates.values = None
    return c.detach(), grad_gates.detach()


def first_order_delta_c_scores(model: nn.Module, batches: list[dict],
                               eps: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor]:
    """``(first-order ΔC per head, baseline C per example)``: ``ΔC_h ≈ −E_x ∂C(x, ξ)/∂ξ_h`` at
    ξ = 1 (first-order Taylor estimate of RAHP eq. 2), one double backward per batch, under eager
    attention (restored afterwards)."""
    gates = ExampleHeadGates(model)
    total = torch.zeros(gates.layout.total, dtype=torch.float64)
    baseline = []
    count = 0
    with gates, eager_attention(model), scoring_mode(model, freeze=True):
        for batch in batches:
            c, grads = gated_c_and_gate_grads(model, batch, gates, eps)
            total += (-grads).double().sum(dim=0).cpu()  # C(x, ξ − e_h) − C(x, ξ) ≈ −∂C(x, ξ)/∂ξ_h per example
            baseline.append(c.float().cpu())
            count += c.shape[0]
    return (total / max(count, 1)).float(), torch.cat(baseline)


class ExactDeltaC:
    """Exact ΔC (RAHP eq. 2, ``delta_c_scores``) of chosen heads on fixed batches; called with a
    list of flat head indices, returns ``{head: ΔC}``. The unmasked baseline C(x, M) is computed on
    the first call and reused by later ones (hybrid mode calls once per refinement round)."""

    def __init__(self, model: nn.Module, batches: list[dict], eps: float = 1e-8, rows_per_pass: int = 256):
        self.model, self.batches, self.eps, self.rows_per_pass = model, batches, eps, rows_per_pass
        self.baseline: torch.Tensor | None = None

    def __call__(self, heads: Sequence[int]) -> dict[int, float]:
        heads = sorted(set(int(h) for h in heads))
        if not heads:
            return {}
        values, self.baseline = delta_c_scores(self.model, self.batches, eps=self.eps,
                                               rows_per_pass=self.rows_per_pass, heads=heads, baseline=self.baseline)
        return dict(zip(heads, values.tolist()))


def hybrid_delta_c(model: nn.Module, batches: list[dict], fisher: torch.Tensor, ratio: float, alpha: float,
                   beta: float, gamma: float, window: int, eps: float = 1e-8, rows_per_pass: int = 256,
                   first_order: torch.Tensor | None = None, extremes: int = 1) -> dict:
    """Hybrid ΔC for RAHP's selection at ``ratio`` (eq. 2 exact near the cut, first-order elsewhere):
    ``refine_near_cut`` from the first-order ΔC of every head (``first_order_delta_c_scores``, unless
    given) with exact ΔC from ``delta_c_scores``.

    At the fixed point, with the returned mixed ΔC and the (exact) Fisher scores: the ``window``
    last pruned and ``window`` first kept unprotected heads of the top-K cut by S (eq. 5) have
    exact ΔC, and so have the ``extremes`` lowest and highest entries of the returned ΔC; the
    min-max normalisation of ΔC' therefore uses exact values, and equals exact mode's unless a head
    whose first-order ΔC ranks outside those ``extremes`` is exactly the most extreme. Then S of
    every exactly computed head is its exact-mode S. Estimated: ΔC of heads ranked more than
    ``window`` places from the cut (and not extreme); their decision is first-order ΔC's.
    Protected heads are chosen by Fisher alone and are unaffected.

    Returns ``delta_c`` (mixed), ``first_order``, ``exact`` (head → exact value), ``iterations``.
    """
    if window < 0:
        raise ConfigError(f"hybrid window must be >= 0, got {window}")
    if first_order is None:
        first_order, _ = first_order_delta_c_scores(model, batches, eps)
    out = refine_near_cut(first_order, fisher, ratio, alpha, beta, gamma, window,
                          ExactDeltaC(model, batches, eps, rows_per_pass), eps, extremes)
    return {**out, "first_order": first_order}
