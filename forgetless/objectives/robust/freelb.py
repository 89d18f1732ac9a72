"""FreeLB (Zhu et al. 2020, "FreeLB: Enhanced Adversarial Training for Natural Language
Understanding", Algorithm 1):

    δ_0 = U(−σ, σ)/√N_δ,  g_0 = 0
    for t = 1..K:   g_t = g_{t−1} + 1/K · ∇_θ L(f_θ(X + δ_{t−1}), y)
                    g_adv = ∇_δ L(f_θ(X + δ_{t−1}), y)
                    δ_t = Π_{‖δ‖_F ≤ ε}(δ_{t−1} + α · g_adv / ‖g_adv‖_F)
    θ ← θ − τ·g_K  (here: the Trainer's optimizer step on the accumulated gradients)

It replaces the Trainer's step (``training_step``): the K backward passes go through the Trainer's
accelerator backward with the Trainer's own loss scaling, so gradient accumulation and
multi-process training keep working (each of the K backward passes is all-reduced under DDP).

Choices, as made here: X is the word-embedding output (a forward hook adds δ); norms and the
projection are per example over its real tokens (padding gets δ_0 = 0; later steps are
projected per example); ε = 0 means no perturbation (δ stays 0; the reference code's
``adv-max-norm 0`` means *unbounded* — use a large ε for that); the K passes share one dropout
mask (the paper's §3.3: the random state is replayed); the loss is cross-entropy. Defaults follow
the paper's GLUE ranges: K = 3, α = 0.1, σ = 0.1, ε = 0.3.
"""
from __future__ import annotations

import torch

from ...training.encode import split_batch
from ...training.objective import Objective, cross_entropy
from .formulas import freelb_init, normalize_l2, project_l2
from .glue import (classification_only, embedding_shape, perturbed_embeddings, rng_state, set_rng_state,
                   trainer_backward)


class FreeLB(Objective):
    def training_step(self, trainer, model, inputs, num_items_in_batch=None):
        config = self.config
        model.train()
        inputs, _extras = split_batch(trainer._prepare_inputs(inputs))
        ids = inputs["input_ids"]
        mask = inputs.get("attention_mask", torch.ones_like(ids))
        delta = freelb_init(embedding_shape(model, ids), mask, config.init_magnitude).to(ids.device)
        token_mask = mask.to(delta.dtype).unsqueeze(-1)
        state = rng_state()
        total = torch.zeros((), device=ids.device)
        for step in range(config.ascent_steps):
            delta.requires_grad_(True)
            set_rng_state(state)
            with trainer.compute_loss_context_manager(), perturbed_embeddings(model, delta):
                logits = model(**inputs).logits
                classification_only(self.config.name, logits)
                loss = cross_entropy(logits, inputs["labels"]) / config.ascent_steps
            total = total + trainer_backward(trainer, loss, num_items_in_batch)
            if step == config.ascent_steps - 1:
                break
            grad = delta.grad.detach() * token_mask
            delta = project_l2(delta.detach() + config.step_size * normalize_l2(grad), config.epsilon)
        return total
