"""Child-Tuning_D (Xu et al. 2021, "Raise a Child in Large Language Model: Towards Effective and
Generalizable Fine-tuning", §3.2, eq. 4-5): before training, the Fisher information of every
parameter on the training data,

    F(w) = 1/|D| Σ_j (∂ log p(y_j | x_j; w) / ∂w)²,

picks the *child network*: the ``kept_share`` of parameters with the highest F. During training
only the child is updated: gradients outside it are zeroed before every optimizer step, so AdamW's
moments stay zero there and its step is zero; AdamW's decoupled weight decay still shrinks them,
as the reference ``ChildTuningAdamW`` does (it masks the gradient and decays every parameter of a
weight-decay group).

Conventions, as made here:
* ``kept_share`` is the share of parameters that stay **trainable** (the paper's ``p_D``, 0.1-0.3).
  RAHP's Table 1 lists a 70% "pruning volume": that is ``kept_share = 0.3`` (70% frozen), the
  default;
* the selection covers the parameters inside the transformer layers (the reference code's names
  containing ``layer``); embeddings, pooler and classifier are always trained, as in the paper's code;
  the top share is taken over all those parameters at once (one global threshold);
* the Fisher pass runs at ``on_train_begin`` with the model the Trainer hands to its callbacks, in
  training mode (dropout on), over the whole training set in order, with the Trainer's batch size
  and collator, one batch-mean gradient per batch, each parameter tensor's gradient clipped to
  ℓ2 norm ``max_grad_norm`` (the Trainer's, 1.0 by default) before squaring, as the reference code
  does (``clip_grad_norm_`` per tensor; the definition has no clipping). Each process of a
  multi-process run computes it over the full set, so all processes hold the same mask;
* the mask is saved in every checkpoint (``child-tuning-mask.safetensors``) and restored on
  resume, so a resumed run does not recompute it on already-trained weights.
"""
from __future__ import annotations

import torch
from torch.utils.data import DataLoader
from transformers import TrainerCallback

from ...errors import ConfigError
from ...training.encode import split_batch
from ...training.objective import Objective, cross_entropy
from .config import ChildTuningConfig
from .formulas import clip_tensor_norm, fisher_information, top_share_masks
from ...training.trainer import load_checkpoint_tensors, save_checkpoint_tensors
from .glue import layer_parameters

MASK_FILE = "child-tuning-mask.safetensors"


def fisher_scores(model, params: list[torch.Tensor], loader, device, max_grad_norm: float | None = None
                  ) -> list[torch.Tensor]:
    """Eq. 4 of Xu et al. over ``loader`` (batches of the Trainer's collator), each tensor's batch
    gradient clipped to ``max_grad_norm`` first (the reference code), without touching ``.grad``."""
    sums = [torch.zeros_like(p, dtype=torch.float32) for p in params]
    batches = 0
    was_training = model.training
    model.train()
    for batch in loader:
        inputs, _ = split_batch({k: v.to(device) for k, v in batch.items()})
        loss = cross_entropy(model(**inputs).logits, inputs["labels"])
        for total, grad in zip(sums, torch.autograd.grad(loss, params, allow_unused=True)):
            if grad is not None:
                total.add_(clip_tensor_norm(grad.detach().float(), max_grad_norm) ** 2)
        batches += 1
    model.train(was_training)
    return fisher_information(sums, batches)


class ChildTuningCallback(TrainerCallback):
    def __init__(self, objective: "ChildTuning"):
        self.objective = objective

    def on_train_begin(self, args, state, control, model=None, train_dataloader=None, **kwargs):
        objective = self.objective
        named = layer_parameters(model)
        objective.names = [n for n, _ in named]
        objective.params = [p for _, p in named]
        if state.global_step > 0:  # the Trainer restored a checkpoint
            saved = load_checkpoint_tensors(args, state, MASK_FILE, "Child-Tuning's mask")
            objective.masks = [saved[n].to(p.device).bool() for n, p in named]
        else:
            if train_dataloader is None:
                raise ConfigError("child-tuning needs the training dataloader at on_train_begin")
            loader = DataLoader(train_dataloader.dataset, batch_size=args.per_device_train_batch_size,
                                shuffle=False, collate_fn=train_dataloader.collate_fn)
            fisher = fisher_scores(model, objective.params, loader, args.device, args.max_grad_norm)
            objective.masks = top_share_masks(fisher, objective.config.kept_share)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        for param, mask in zip(self.objective.params, self.objective.masks):
            if param.grad is not None:
                param.grad.mul_(mask)

    def on_save(self, args, state, control, **kwargs):
        save_checkpoint_tensors(args, state, MASK_FILE, {n: m.to(torch.uint8) for n, m in
                                                         zip(self.objective.names, self.objective.masks)})


class ChildTuning(Objective):
    """Cross-entropy; the child network is chosen and enforced by the callback."""

    def __init__(self, config: ChildTuningConfig):
        super().__init__(config)
        self.names: list[str] = []
        self.params: list[torch.Tensor] = []
        self.masks: list[torch.Tensor] = []

    def callbacks(self) -> list:
        return [ChildTuningCallback(self)]

    def kept_fraction(self) -> float:
        total = sum(m.numel() for m in self.masks)
        return sum(int(m.sum()) for m in self.masks) / total if total else float("nan")

    def log_values(self) -> dict[str, float]:
        return {"child_tuning_kept_share": self.kept_fraction()} if self.masks else {}
