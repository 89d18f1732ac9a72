"""ROSE (Jiang et al. 2022, "ROSE: Robust Selective Fine-tuning for Pre-trained Language Models",
§3): at every optimizer step, keep only the parameter updates whose *risk* lies between two
quantiles — below the lower one an update is of little value, above the upper one it is unrobust —
and drop the others:  ``θ_{t+1} = θ_t + M_t ⊙ Δθ_t``.

* **ROSE-First** (``rose-first``): the batch goes through the model twice (two dropout masks); the
  risk of a weight tensor is the norm of the gradient of the symmetric KL between the two
  predictions, ``‖∇_W ½(KL(P1‖P2) + KL(P2‖P1))‖`` (first-order: how much the tensor drives the
  prediction's sensitivity to dropout noise). The model trains on the mean cross-entropy of the
  two passes; the KL only selects.
* **ROSE-Second** (``rose-second``): one pass, cross-entropy; the risk of a tensor compares the
  current gradient with Adam's first moment of the previous steps,
  ``|(1 − β1)·‖g_t‖ / ‖m_{t−1}‖ − 1|`` (second-order: the change of the update direction's
  momentum). At the first step there is no moment and every update is kept.
* **ROSE-Ensemble** (``rose-ensemble``): both, ``M = γ·M_first + (1 − γ)·M_second`` (γ =
  ``first_order_weight``, 0.5), a soft mask that scales updates by 0, γ, 1 − γ or 1.

How the update is masked follows the reference implementation: the mask acts per weight tensor
inside the transformer layers (names with ``layer`` and ``weight``; embeddings, biases, pooler and
classifier are always updated); for a dropped tensor the gradient is replaced by Adam's first moment
before the step (so its momentum does not move), and after the step ``θ_t + M ⊙ (θ' − θ_t)`` is
written back (the update, including AdamW's decoupled weight decay, is scaled by M). The reference
starts masking after the warm-up steps; so does this. Selection (option ``selection``):
``quantile`` (default, the reference code) or ``rank`` (an exact count), ``formulas.py``; the two can
differ by one tensor (e.g. for n = 16 and for RoBERTa-base). RAHP's Table 1 drops 60% of the updates; the
defaults drop the 55% least valuable and the 5% least robust (``lower_quantile = 0.55``,
``upper_quantile = 0.95``; the reference code's defaults are 0.50 / 0.95). With gradient
accumulation, first-order risks are summed over the micro-batches; in multi-process runs they are
averaged over processes so every process keeps the same tensors.
"""
from __future__ import annotations

import torch
from transformers import TrainerCallback

from ...errors import ConfigError
from ...training.encode import split_batch
from ...training.objective import Objective, cross_entropy
from .config import RoseConfig
from .formulas import ROSE_SELECTIONS, apply_update_mask, ensemble_mask, second_order_risk, symmetric_kl
from .glue import classification_only, layer_parameters, trainer_backward


def second_order_mask(params, optimizer, lower: float, upper: float, selection: str = "quantile") -> torch.Tensor:
    """ROSE-Second's mask over ``params`` from their gradients and the optimizer's first moments."""
    state = optimizer.state
    moments = [state[p].get("exp_avg") if p in state else None for p in params]
    if all(m is None for m in moments):
        if any(len(state[p]) for p in params if p in state):
            raise ConfigError("rose-second needs an Adam-type optimizer (first moment 'exp_avg' in its state)")
        return torch.ones(len(params))  # first step: no history yet, every update is kept
    beta1 = optimizer.param_groups[0]["betas"][0]
    grads = torch.stack([p.grad.detach().float().norm() if p.grad is not None else torch.zeros(()) for p in params])
    history = torch.stack([m.float().norm() if m is not None else torch.zeros(()) for m in moments])
    return ROSE_SELECTIONS[selection](second_order_risk(grads.cpu(), history.cpu(), beta1), lower, upper)


class RoseCallback(TrainerCallback):
    """Chooses the mask before each optimizer step and scales the update after it."""

    def __init__(self, objective: "RoseSecond"):
        self.objective = objective

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self.objective.bind(model)

    def on_pre_optimizer_step(self, args, state, control, optimizer=None, **kwargs):
        objective = self.objective
        mask = objective.current_mask(optimizer)
        objective.first_risk = None
        if state.global_step < args.get_warmup_steps(state.max_steps):
            mask = torch.ones_like(mask)
        objective.mask = mask
        objective.before = {}
        for i, param in enumerate(objective.params):
            if mask[i] >= 1.0:
                continue
            moment = optimizer.state[param].get("exp_avg") if param in optimizer.state else None
            if param.grad is not None:  # a dropped tensor's momentum stays put (zero before the first step)
                param.grad.mul_(float(mask[i]))
                if moment is not None:
                    param.grad.add_(moment, alpha=1.0 - float(mask[i]))
            objective.before[i] = param.detach().clone()

    def on_optimizer_step(self, args, state, control, **kwargs):
        objective = self.objective
        with torch.no_grad():
            for i, before in objective.before.items():
                param = objective.params[i]
                param.copy_(apply_update_mask(before, param, float(objective.mask[i])))
        objective.before = {}


class RoseSecond(Objective):
    """Cross-entropy; updates selected by the second-order risk."""

    def __init__(self, config: RoseConfig):
        super().__init__(config)
        self.params: list[torch.nn.Parameter] = []
        self.names: list[str] = []
        self.first_risk: torch.Tensor | None = None
        self.mask: torch.Tensor | None = None
        self.before: dict[int, torch.Tensor] = {}

    def bind(self, model) -> None:
        named = layer_parameters(model, weights_only=True)
        self.names = [n for n, _ in named]
        self.params = [p for _, p in named]

    def callbacks(self) -> list:
        return [RoseCallback(self)]

    def current_mask(self, optimizer) -> torch.Tensor:
        return second_order_mask(self.params, optimizer, self.config.lower_quantile, self.config.upper_quantile,
                                 self.config.selection)

    def log_values(self) -> dict[str, float]:
        return {"rose_kept_share": float(self.mask.mean())} if self.mask is not None else {}


class FirstOrderStep:
    """``training_step`` of ROSE-First / -Ensemble: two dropout passes, the first-order risks from
    the gradient of their symmetric KL, the mean cross-entropy through the Trainer's backward."""

    def training_step(self, trainer, model, inputs, num_items_in_batch=None):
        model.train()
        inputs, _extras = split_batch(trainer._prepare_inputs(inputs))
        with trainer.compute_loss_context_manager():
            first = model(**inputs).logits
            second = model(**inputs).logits
            classification_only(self.config.name, first)
            labels = inputs["labels"]
            ce = 0.5 * (cross_entropy(first, labels) + cross_entropy(second, labels))
            kl = 0.5 * symmetric_kl(first, second).mean()
        grads = torch.autograd.grad(kl, self.params, retain_graph=True, allow_unused=True)
        risk = torch.stack([g.detach().float().norm() if g is not None else torch.zeros((), device=first.device)
                            for g in grads])
        self.first_risk = risk if self.first_risk is None else self.first_risk + risk
        return trainer_backward(trainer, ce, num_items_in_batch)

    def first_order_mask(self, optimizer) -> torch.Tensor:
        if self.first_risk is None:
            raise ConfigError(f"{self.config.name}: no first-order risk before the optimizer step "
                              "(training_step not run)")
        risk = self.first_risk
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(risk)
            risk = risk / torch.distributed.get_world_size()
        return ROSE_SELECTIONS[self.config.selection](risk.cpu(), self.config.lower_quantile, self.config.upper_quantile)


class RoseFirst(FirstOrderStep, RoseSecond):
    def current_mask(self, optimizer) -> torch.Tensor:
        return self.first_order_mask(optimizer)


class RoseEnsemble(FirstOrderStep, RoseSecond):
    def current_mask(self, optimizer) -> torch.Tensor:
        first = self.first_order_mask(optimizer)
        second = second_order_mask(self.params, optimizer, self.config.lower_quantile, self.config.upper_quantile,
                                   self.config.selection)
        return ensemble_mask(first, second, self.config.first_order_weight)
