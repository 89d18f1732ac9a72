"""Model glue for head scoring (the maths is in ``scores.py``): per-example head gates
(``ExampleHeadGates``: every example gets its own gate vector, so one backward pass yields every
example's own gradient, no model copies) and the per-head scores computed on a model: Michel et al.
(2019) importance, RAHP's ΔC (eq. 1-2: baseline computed once, masked passes batched, weights
frozen) and Fisher (eq. 3-4, from per-example gradients).
"""
from __future__ import annotations

import torch
from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...metrics.predict import scoring_mode
from ...models.gates import HookSet
from ...progress import bar
from ...training.encode import IGNORE_INDEX, TOKEN_KEYS
from .._shared.head_layout import head_layout
from .scores import head_sq_norms, margin, per_example_norm, robustness_ratio


class ExampleHeadGates(HookSet):
    """Per-example head gates: ``values`` is a (rows, heads) tensor in ``head_layout`` order; the
    hook on each attention output projection multiplies head h of row i by ``values[i, h]``.
    With ``values = None`` the hooks do nothing. Use as a context manager."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.layout = head_layout(model)
        self.values: torch.Tensor | None = None
        offsets = self.layout.offsets()
        self.gate_heads(model, lambda site: self._source(offsets[site.key], site.num_heads))

    def _source(self, offset: int, n_heads: int):
        def gate():
            if self.values is None:
                return None
            return self.values[:, offset:offset + n_heads]

        return gate


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _inputs(batch: dict, device, repeat: int = 1) -> dict:
    return {k: v.to(device).repeat(repeat, *([1] * (v.dim() - 1))) for k, v in batch.items() if k in TOKEN_KEYS}


def margin_and_grad_norm(model: nn.Module, batch: dict, repeat: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Margins ``g`` and ``‖∇_x g‖₂`` w.r.t. the input (word) embeddings, per row; the batch is
    tiled ``repeat`` times (rows of copy j are ``j·B … j·B+B-1``). Rows never interact, so one
    backward of ``Σ g`` gives every row's own gradient."""
    device = _device(model)
    inputs = _inputs(batch, device, repeat)
    embeds = model.get_input_embeddings()(inputs.pop("input_ids")).detach().requires_grad_(True)
    logits = get_adapter(model).logits_from_embeds(model, embeds, inputs).float()
    labels = batch["labels"].to(device).repeat(repeat)
    g = margin(logits, labels)
    (grad,) = torch.autograd.grad(g.sum(), embeds)
    return g.detach(), per_example_norm(grad.float())


def robustness_c(model: nn.Module, batches: list[dict], eps: float = 1e-8) -> torch.Tensor:
    """``C(x, M)`` (RAHP eq. 1) for every example of ``batches``, in batch order."""
    with scoring_mode(model, freeze=True):
        out = [robustness_ratio(*margin_and_grad_norm(model, b), eps=eps) for b in batches]
    return torch.cat(out).cpu()


def delta_c_scores(model: nn.Module, batches: list[dict], eps: float = 1e-8,
                   rows_per_pass: int = 256, heads: list[int] | None = None,
                   baseline: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ΔC per head, baseline C per example)``: RAHP eq. 2 with one masked forward+backward
    per head, several heads per pass (each tiled copy of a batch masks a different head).
    ``heads`` (flat indices) restricts the computation to those heads; ΔC is then in their order.
    ``baseline`` (the C(x, M) this function returned before for the same batches) skips the
    unmasked pass: hybrid mode calls this once per refinement round."""
    gates = ExampleHeadGates(model)
    layout = gates.layout
    n = layout.total
    targets = list(range(n)) if heads is None else [int(h) for h in heads]
    if any(not 0 <= h < n for h in targets):
        raise ConfigError(f"head indices must lie in [0, {n}), got {targets}")
    total = torch.zeros(len(targets), dtype=torch.float64)
    given, baseline = baseline, []
    examples = sum(batch["labels"].shape[0] for batch in batches)
    if given is not None and given.shape[0] != examples:
        raise ConfigError(f"baseline has {given.shape[0]} values for {examples} examples")
    count = 0
    with gates, scoring_mode(model, freeze=True):
        for batch in bar(batches, "ΔCLEVER head scores (RAHP eq. 2)"):
            b = batch["labels"].shape[0]
            gates.values = None
            base = (robustness_ratio(*margin_and_grad_norm(model, batch), eps=eps).cpu() if given is None
                    else given[count:count + b])
            baseline.append(base)
            chunk = max(1, rows_per_pass // b)
            for start in range(0, len(targets), chunk):
                masked = targets[start:start + chunk]
                values = torch.ones(len(masked), b, n, device=_device(model))
                for j, h in enumerate(masked):
                    values[j, :, h] = 0.0
                gates.values = values.reshape(len(masked) * b, n)
                c = robustness_ratio(*margin_and_grad_norm(model, batch, repeat=len(masked)), eps=eps)
                diff = c.cpu().reshape(len(masked), b) - base.unsqueeze(0)
                total[start:start + len(masked)] += diff.double().sum(dim=1)
            count += b
    return (total / max(count, 1)).float(), torch.cat(baseline)


def summed_label_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Σ over the batch of each example's cross-entropy of its gold label: the class (a classifier's
    ``(B, C)`` logits) or the label word's tokens after the prompt (a causal LM's ``(B, T, V)``
    logits, ``labels`` ``IGNORE_INDEX`` elsewhere; position t predicts token t + 1)."""
    if labels.dim() == 1:
        return nn.functional.cross_entropy(logits, labels, reduction="sum")
    return nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(),
                                       ignore_index=IGNORE_INDEX, reduction="sum")


def michel_importance(model: nn.Module, batches: list[dict]) -> torch.Tensor:
    """Michel et al. (2019) head importance ``E_x |∂L(x)/∂ξ_h|`` (L the cross-entropy of the gold
    label, ``summed_label_loss``), exact per example through per-example gates; weights frozen (only
    gate gradients are needed)."""
    gates = ExampleHeadGates(model)
    total = torch.zeros(gates.layout.total, dtype=torch.float64)
    count = 0
    device = _device(model)
    with gates, scoring_mode(model, freeze=True):
        for batch in bar(batches, "head importance (Michel et al. 2019)"):
            inputs = _inputs(batch, device)
            b = inputs["input_ids"].shape[0]
            gates.values = torch.ones(b, gates.layout.total, device=device, requires_grad=True)
            logits = model(**inputs).logits.float()
            loss = summed_label_loss(logits, batch["labels"].to(device))
            (grad,) = torch.autograd.grad(loss, gates.values)
            total += grad.abs().sum(dim=0).double().cpu()
            count += b
    return (total / max(count, 1)).float()


def fisher_scores(model: nn.Module, batches: list[dict]) -> torch.Tensor:
    """RAHP eq. 3: ``F_h = E_(x,y) ‖∇_θ_h J(x, y)‖₂²`` with J the cross-entropy of one example
    and θ_h the head's slices of the query, key, value (rows, biases included) and output
    projection (columns). Exact per-example gradients from one batched backward: for a linear
    layer ``y = W a + b`` the gradient of example i is ``Σ_t δ_it a_itᵀ`` (δ = ∂J_i/∂y), formed
    per example from the captured inputs a and output gradients δ (padding has δ = 0)."""
    layout = head_layout(model)
    offsets = layout.offsets()
    device = _device(model)
    total = torch.zeros(layout.total, dtype=torch.float64)
    count = 0
    captured: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    hooks, linears = HookSet(), []
    for site in get_adapter(model).attention_sites(model):
        if not site.num_heads:
            continue
        inputs = [("qkv", site.qkv)] if site.qkv is not None else [("q", site.q), ("k", site.k), ("v", site.v)]
        for role, slot in inputs + [("o", site.o)]:
            lin = slot.get()
            linears.append((site.key, site.unit_width(role), role, lin))  # GQA: k/v rows per unit differ
            hooks.add(lin.register_forward_hook(
                lambda m, args, out: captured.__setitem__(id(m), (args[0].detach(), out))))
    with hooks, scoring_mode(model, freeze=True):
        for batch in bar(batches, "Fisher head scores (RAHP)"):
            captured.clear()
            inputs = _inputs(batch, device)
            ids = inputs.pop("input_ids")
            # weights stay frozen; a grad-requiring input makes every projection output differentiable
            embeds = model.get_input_embeddings()(ids).detach().requires_grad_(True)
            logits = get_adapter(model).logits_from_embeds(model, embeds, inputs).float()
            loss = nn.functional.cross_entropy(logits, batch["labels"].to(device), reduction="sum")
            outs = [captured[id(lin)][1] for *_, lin in linears]
            deltas = torch.autograd.grad(loss, outs)
            for (key, head_dim, role, lin), delta in zip(linears, deltas):
                a = captured[id(lin)][0].float()
                d = delta.float()
                grad_w = torch.einsum("bto,bti->boi", d, a)  # per-example weight gradients
                if role == "o":  # heads are input columns of the output projection
                    sq = head_sq_norms(grad_w.transpose(1, 2), 1, head_dim)
                else:
                    sq = head_sq_norms(grad_w, 1, head_dim)
                    if lin.bias is not None:
                        sq = sq + head_sq_norms(d.sum(dim=1), 1, head_dim)
                    if role == "qkv":  # fused [q | k | v] (GPT-2): a head owns one block per third
                        sq = sq.reshape(3, -1).sum(dim=0)
                pos = offsets[key]  # sq: per-head sums over the batch's examples
                total[pos:pos + sq.numel()] += sq.double().cpu()
            count += ids.shape[0]
    return (total / max(count, 1)).float()
