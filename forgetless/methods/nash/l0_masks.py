"""Learnable hard-concrete masks on attention heads, FFN units and (CoFi-style) whole attention /
FFN sub-layers of a model, applied by forward pre-hooks; parameter counts read from the modules.

NASH narrows the encoder with one mask per encoder head and per encoder FFN unit (Ko et al. §4.2,
appendix B); the CoFi-style baseline (Xia et al. 2022 §3) adds one mask per attention sub-layer
(MHA) and per FFN sub-layer, in encoder and decoder. The expected remaining parameter count is

    E[params] = Σ_heads P(z_h ≠ 0) P(z_MHA ≠ 0) n_h + Σ_units P(z_u ≠ 0) P(z_FFN ≠ 0) n_u,

with n_h, n_u each head's / unit's real parameter count (q, k, v rows and biases, o columns,
T5's relative-bias column where a layer owns one; FFN input rows and biases, output columns), so
the expected sparsity is ŝ = 1 − E[params] / Σ n. ``finalize`` folds the deterministic gate values
into the output projections and removes every zero unit with ``surgery`` (masked == sliced).
"""
from __future__ import annotations

import torch
from torch import nn

from ...models import surgery
from ...models.adapters import get_adapter
from ...models.gates import HookSet
from ...models.sites import AttentionSite, FfnSite
from . import hard_concrete as hc


def head_param_count(site: AttentionSite) -> int:
    """Parameters one head of ``site`` owns (every head of a site owns the same number)."""
    if site.num_heads == 0:
        return 0
    total = 0
    for param, dim, _role in site.head_parameters():
        total += param.numel() // param.shape[dim] * site.head_dim
    bias = getattr(site.core.get(), "relative_attention_bias", None)
    if isinstance(bias, nn.Embedding):
        total += bias.num_embeddings
    return total


def unit_param_count(site: FfnSite) -> int:
    """Parameters one FFN intermediate unit of ``site`` owns."""
    return sum(param.numel() // param.shape[dim] for param, dim in site.unit_parameters())


def _name(key) -> str:
    return "_".join(str(k) for k in key)


class L0Masks(nn.Module):
    """Hard-concrete masks for the heads / FFN units of the chosen ``stacks`` of ``model``.

    ``layer_masks=True`` adds CoFi's per-sub-layer MHA and FFN masks. Holds the Lagrange
    multipliers λ1, λ2 (trained by gradient ascent). Call ``install(model)`` to apply the masks;
    each training forward draws fresh samples, evaluation uses the deterministic values (reaching
    ``target`` when set, exactly what ``finalize`` keeps).
    """

    def __init__(self, model: nn.Module, stacks: tuple[str, ...] = ("encoder",), layer_masks: bool = False,
                 init_log_alpha: float = 3.0, heads: bool = True, ffn: bool = True, target: float | None = None):
        super().__init__()
        self.target = target  # evaluation-mode masks are ``deterministic(target)``, as ``finalize`` uses
        adapter = get_adapter(model)
        self.stacks = tuple(stacks)
        self.log_alpha = nn.ParameterDict()
        self.groups: dict[str, dict] = {}  # name → {"kind", "key", "cost" (per unit), "parent"}
        if heads:
            for site in adapter.attention_sites(model):
                if site.stack in self.stacks and site.num_heads > 0:
                    self._add(f"head_{_name(site.key)}", "head", site.key, site.num_heads, head_param_count(site),
                              init_log_alpha, layer_masks)
        if ffn:
            for site in adapter.ffn_sites(model):
                if site.stack in self.stacks and site.width > 0:
                    self._add(f"ffn_{_name(site.key)}", "ffn", site.key, site.width, unit_param_count(site),
                              init_log_alpha, layer_masks)
        self.lambda_1 = hc.ascent(nn.Parameter(torch.zeros(())))
        self.lambda_2 = hc.ascent(nn.Parameter(torch.zeros(())))
        self._current: dict[str, torch.Tensor] = {}
        self._hooks = HookSet()

    def _add(self, name, kind, key, n, cost, init, layer_masks):
        self.log_alpha[name] = nn.Parameter(torch.full((n,), float(init)))
        parent = None
        if layer_masks:
            parent = f"layer_{name}"
            self.log_alpha[parent] = nn.Parameter(torch.full((1,), float(init)))
        self.groups[name] = {"kind": kind, "key": key, "cost": cost, "parent": parent}

    # ----- expectations ------------------------------------------------------------------------
    def total_params(self) -> float:
        return float(sum(g["cost"] * self.log_alpha[n].numel() for n, g in self.groups.items()))

    def expected_params(self) -> torch.Tensor:
        total = self.lambda_1.new_zeros(())
        for name, g in self.groups.items():
            p = hc.prob_nonzero(self.log_alpha[name])
            if g["parent"] is not None:
                p = p * hc.prob_nonzero(self.log_alpha[g["parent"]])
            total = total + p.sum() * g["cost"]
        return total

    def expected_sparsity(self) -> torch.Tensor:
        return 1.0 - self.expected_params() / self.total_params()

    # ----- gate values -------------------------------------------------------------------------
    def sample(self) -> dict[str, torch.Tensor]:
        values = {}
        for name, g in self.groups.items():
            z = hc.sample_gates(self.log_alpha[name])
            if g["parent"] is not None:
                z = z * hc.sample_gates(self.log_alpha[g["parent"]])
            values[name] = z
        return values

    @torch.no_grad()
    def deterministic(self, target: float | None = None) -> dict[str, torch.Tensor]:
        """Test-time gate values; with ``target``, units are kept by decreasing log α (within
        sub-layers whose own gate is non-zero) while the kept parameters fit ``(1 − target)``
        of the total, so the sparsity reaches the target. Kept units carry ẑ (eq. 13)."""
        values, scores, costs, owners = {}, [], [], []
        for name, g in self.groups.items():
            z = hc.deterministic_gates(self.log_alpha[name])
            alive = 1.0
            if g["parent"] is not None:
                alive = float(hc.deterministic_gates(self.log_alpha[g["parent"]]))
                z = z * alive
            values[name] = z
            score = self.log_alpha[name].detach().clone()
            if alive == 0.0:
                score.fill_(float("-inf"))
            scores.append(score)
            costs.append(torch.full_like(score, float(g["cost"])))
            owners.append(name)
        if target is not None:
            flat_scores, flat_costs = torch.cat(scores), torch.cat(costs)
            flat_scores = torch.where(torch.isinf(flat_scores), torch.full_like(flat_scores, -1e30), flat_scores)
            keep = hc.budget_mask(flat_scores, flat_costs, (1.0 - target) * self.total_params())
            start = 0
            for name, score in zip(owners, scores):
                n = score.numel()
                values[name] = values[name] * keep[start:start + n].to(values[name].dtype)
                start += n
        return values

    def sparsity_of(self, values: dict[str, torch.Tensor]) -> float:
        kept = sum(float((v != 0).sum()) * self.groups[n]["cost"] for n, v in values.items())
        return 1.0 - kept / self.total_params()

    # ----- hooks ---------------------------------------------------------------------------------
    def _on_forward(self, training: bool) -> None:
        if training:  # one fresh sample per training forward, shared by all sites
            self._current = self.sample()
            self._eval_cache = None

    def values_for(self, training: bool) -> dict[str, torch.Tensor]:
        if training:
            return self._current
        if getattr(self, "_eval_cache", None) is None:
            self._eval_cache = self.deterministic(self.target)
        return self._eval_cache

    def install(self, model: nn.Module) -> "L0Masks":
        self.remove()
        self._hooks.add(model.register_forward_pre_hook(lambda m, a: self._on_forward(m.training)))
        self._hooks.gate_heads(model, lambda site: self._source(f"head_{_name(site.key)}", site.o.get()))
        self._hooks.gate_units(model, lambda site: self._source(f"ffn_{_name(site.key)}", site.output.get()))
        return self

    def _source(self, name: str, module: nn.Module):
        if name not in self.groups:
            return None
        return lambda: self.values_for(module.training)[name]

    def remove(self) -> None:
        self._hooks.remove()

    # ----- finalize ------------------------------------------------------------------------------
    @torch.no_grad()
    def finalize(self, model: nn.Module, values: dict[str, torch.Tensor]) -> nn.Module:
        """Fold ``values`` into the output projections and physically remove every zero unit."""
        self.remove()
        adapter = get_adapter(model)
        heads, units = {}, {}
        for site in adapter.attention_sites(model):
            name = f"head_{_name(site.key)}"
            if name in values:
                z = values[name].to(site.o.get().weight.dtype)
                site.o.get().weight.mul_(z.repeat_interleave(site.head_dim)[None, :])
                heads[site.key] = torch.nonzero(z).flatten().tolist()
        for site in adapter.ffn_sites(model):
            name = f"ffn_{_name(site.key)}"
            if name in values:
                z = values[name].to(site.output.get().weight.dtype)
                site.output.get().weight.mul_(z[None, :])
                units[site.key] = torch.nonzero(z).flatten().tolist()
        surgery.prune_heads(model, heads)
        surgery.prune_ffn(model, units)
        return model


class LagrangianRegularizer:
    """The training regulariser of the L0 masks (CoFi eq. 5, NASH §4.2):
    ``R = λ1 (ŝ − t) + λ2 (ŝ − t)²`` with ŝ the masks' expected sparsity and t the target, raised
    linearly from 0 over ``warmup_steps``. The Trainer adds ``loss(step)`` to the objective and
    trains log α (descent) and λ1, λ2 (ascent, see ``hard_concrete.ascent``) in their own parameter
    groups at ``learning_rate``."""

    def __init__(self, masks: L0Masks, target: float, warmup_steps: int, learning_rate: float):
        self.masks = masks
        self.target = target
        self.warmup_steps = warmup_steps
        self.learning_rate = learning_rate
        self._logged: dict[str, float] = {}

    def loss(self, step: int) -> torch.Tensor:
        target = hc.target_at(step, self.target, self.warmup_steps)
        expected = self.masks.expected_sparsity()
        self._logged = {"expected_sparsity": float(expected.detach()), "target_sparsity": target,
                        "lambda_1": float(self.masks.lambda_1.detach()), "lambda_2": float(self.masks.lambda_2.detach())}
        return hc.lagrangian_term(expected, target, self.masks.lambda_1, self.masks.lambda_2)

    def param_groups(self) -> list[dict]:
        return [{"params": list(self.masks.log_alpha.parameters()), "lr": self.learning_rate, "weight_decay": 0.0},
                {"params": [self.masks.lambda_1, self.masks.lambda_2], "lr": self.learning_rate,
                 "weight_decay": 0.0}]

    def log_values(self) -> dict[str, float]:
        return dict(self._logged)
