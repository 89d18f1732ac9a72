"""SMART (Jiang et al. 2020, "SMART: Robust and Efficient Fine-Tuning for Pre-trained Natural
Language Models through Principled Regularized Optimization", eq. 1-3 and Algorithm 1):

    min_θ  L(θ) + λ_s·R_s(θ) + μ·D_Breg(θ, θ̃_t)
    R_s(θ)  = 1/n Σ_i max_{‖x̃_i − x_i‖∞ ≤ ε} ℓ_s(f(x̃_i; θ), f(x_i; θ))          (eq. 2)
    D_Breg  = 1/n Σ_i ℓ_s(f(x_i; θ), f(x_i; θ̃_t))                               (eq. 3)
    θ̃_t    = (1 − β)·θ_t + β·θ̃_{t−1}                                           (momentum, §3.2)

with ``ℓ_s`` the symmetric KL for classification. Two readings of the inner max (option
``perturbation``):

* ``mt_dnn`` (default: the authors' code, MT-DNN ``SmartPerturbation`` with ``train.py``'s defaults
  ``adv_noise_var`` σ = 1e-5, ``adv_step_size`` η = 1e-5, ``adv_epsilon`` 1e-6, ``adv_k`` 1,
  ``adv_alpha`` λ_s = 1, ``adv_p_norm`` inf): ν is added to the *embedding layer's output* (after
  its LayerNorm: what the first transformer layer reads); ν₀ = σ·N(0, I); each step ascends MT-DNN's
  ``stable_kl`` summed over the batch and sets ``ν ← (ν + η·g) / (max_h |ν + η·g| + ε)`` per token
  (``formulas.mtdnn_step``): no ε-ball, every token's perturbation ends near ℓ∞ norm 1 and ε only
  keeps the division finite; R_s is ``SymKlCriterion``, the batch mean of the symmetric KL with one
  side detached per direction (``formulas.symmetric_kl_one_side``). MT-DNN feeds the perturbed
  output back through ``inputs_embeds``, which adds position embeddings and LayerNorm a second time
  (so its "perturbed" pass differs from the clean one even at ν = 0); here a forward hook adds ν to
  the output instead, so ν is the only difference.
* ``alg1_literal`` (Algorithm 1 read literally; forgetless' earlier default): ν on the raw
  word-embedding lookup, projected onto the ℓ∞ ball of radius ``epsilon`` (1e-5) after each step
  ``x̃ ← Π(x̃ + η·g̃/‖g̃‖∞)`` (η = 1e-3 per example), gradients of R_s through both predictions. At
  these defaults the perturbation is ~1e-5 and R_s ~1e-9: the objective is CE + the proximal term.

Choices shared by both, as made here: the perturbed passes, the clean pass and the anchor's pass use
the *same* dropout mask (the random state is replayed; MT-DNN draws a new one per pass), so R_s
measures the input perturbation only and D_Breg the parameter distance only — D_Breg is then exactly
0 while θ̃ = θ; θ̃ (the anchor) is a frozen copy of the model made at the start of training and
updated after every optimizer step (S = 1 inner step of Algorithm 1; MT-DNN's public code has no
proximal term: set ``proximal_weight`` 0 for it); it is written to every checkpoint as
``smart-anchor.safetensors`` and restored on resume, so a resumed run equals an uninterrupted one.
"""
from __future__ import annotations

import copy

import torch
from transformers import TrainerCallback

from ...training.objective import Objective, cross_entropy
from .config import SmartConfig
from .formulas import (ema_update, mtdnn_step, normalize_linf, project_linf, stable_kl_sum, symmetric_kl,
                       symmetric_kl_one_side)
from ...training.trainer import load_checkpoint_tensors, save_checkpoint_tensors
from .glue import classification_only, embedding_shape, perturbed_embeddings, rng_state, set_rng_state, unwrap

ANCHOR_FILE = "smart-anchor.safetensors"


def perturbation(model, inputs: dict, clean_logits: torch.Tensor, noise: torch.Tensor, state: dict,
                 config: SmartConfig) -> torch.Tensor | None:
    """The adversarial perturbation ν, detached; every pass replays the random ``state`` (the clean
    pass's dropout mask). ``mt_dnn``: ``ν = σ·noise``, then ``T_x̃`` steps ``ν ← mtdnn_step(ν,
    ∇_ν stable_kl_sum(f(x + ν), f(x)))`` on the embedding layer's output; ``None`` when the gradient is
    not finite (MT-DNN then skips the term). ``alg1_literal``: ``δ = Π(σ·noise)``, then ``T_x̃`` steps
    ``δ ← Π(δ + η·g / ‖g‖∞)`` with ``g = ∇_δ ℓ_s(f(x+δ), f(x))``, inside the ε-ball."""
    mt_dnn = config.perturbation == "mt_dnn"
    delta = noise * config.noise_std if mt_dnn else project_linf(noise * config.noise_std, config.epsilon)
    target = clean_logits.detach()
    for _ in range(config.ascent_steps):
        delta.requires_grad_(True)
        set_rng_state(state)
        with perturbed_embeddings(model, delta, after_layer_norm=mt_dnn):
            logits = model(**inputs).logits
        if mt_dnn:
            grad, = torch.autograd.grad(stable_kl_sum(logits, target), delta)
            if not torch.isfinite(grad.norm()):
                return None
            delta = mtdnn_step(delta.detach(), grad, config.step_size, config.norm_epsilon)
        else:
            grad, = torch.autograd.grad(symmetric_kl(logits, target).mean(), delta)
            delta = project_linf(delta.detach() + config.step_size * normalize_linf(grad), config.epsilon)
    return delta.detach()


class AnchorCallback(TrainerCallback):
    """Creates θ̃ at the start of training (or restores it from the resumed checkpoint), moves it
    after every optimizer step and saves it with every checkpoint."""

    def __init__(self, objective: "Smart"):
        self.objective = objective

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        anchor = self.objective.make_anchor(model)
        if state.global_step > 0:  # the Trainer restored a checkpoint
            saved = load_checkpoint_tensors(args, state, ANCHOR_FILE, "SMART's momentum model θ̃")
            with torch.no_grad():
                for name, param in anchor.named_parameters():
                    param.copy_(saved[name])

    def on_step_end(self, args, state, control, model=None, **kwargs):
        anchor = self.objective.anchor
        params = dict(unwrap(model).named_parameters())
        names = [name for name, _ in anchor.named_parameters()]
        ema_update([p for _, p in anchor.named_parameters()], [params[n] for n in names], self.objective.config.momentum)

    def on_save(self, args, state, control, **kwargs):
        save_checkpoint_tensors(args, state, ANCHOR_FILE, dict(self.objective.anchor.named_parameters()))


class Smart(Objective):
    def __init__(self, config: SmartConfig):
        super().__init__(config)
        self.anchor = None
        self.last_perturbation: torch.Tensor | None = None
        self._last: dict[str, float] = {}

    def make_anchor(self, model) -> torch.nn.Module:
        self.anchor = copy.deepcopy(unwrap(model))
        self.anchor.requires_grad_(False)
        return self.anchor

    def callbacks(self) -> list:
        return [AnchorCallback(self)]

    def loss_terms(self, model, inputs: dict) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, object]:
        """``(CE, R_s, D_Breg, outputs)`` of one batch in training mode."""
        config = self.config
        if self.anchor is None:  # used outside fine_tune: the anchor starts as the current model
            self.make_anchor(model)
        # the initial noise is drawn first, so every pass below replays one random state
        noise = torch.randn(embedding_shape(model, inputs["input_ids"]), device=inputs["input_ids"].device)
        state = rng_state()
        outputs = model(**inputs)
        logits = outputs.logits
        classification_only(self.config.name, logits)
        ce = cross_entropy(logits, inputs["labels"])
        zero = logits.new_zeros(())
        bregman = zero
        if config.proximal_weight > 0:
            set_rng_state(state)
            self.anchor.train(model.training)
            with torch.no_grad():
                anchor_logits = self.anchor(**inputs).logits
            bregman = symmetric_kl(logits, anchor_logits).mean()
        smoothness = zero
        if config.smoothness_weight > 0:
            mt_dnn = config.perturbation == "mt_dnn"
            delta = perturbation(model, inputs, logits, noise, state, config)
            if delta is not None:
                set_rng_state(state)
                with perturbed_embeddings(model, delta, after_layer_norm=mt_dnn):
                    adv = model(**inputs).logits
                smoothness = symmetric_kl_one_side(logits, adv).mean() if mt_dnn else symmetric_kl(adv, logits).mean()
            self.last_perturbation = delta
        # every pass replayed one random state, so it now stands where one forward pass leaves it
        return ce, smoothness, bregman, outputs

    def compute_loss(self, model, inputs, extras):
        if not model.training:
            outputs = model(**inputs)
            return cross_entropy(outputs.logits, inputs["labels"]), outputs
        ce, smoothness, bregman, outputs = self.loss_terms(model, inputs)
        self._last = {"smart_ce": float(ce.detach()), "smart_smoothness": float(smoothness.detach()),
                      "smart_bregman": float(bregman.detach())}
        return ce + self.config.smoothness_weight * smoothness + self.config.proximal_weight * bregman, outputs

    def log_values(self) -> dict[str, float]:
        return dict(self._last)
