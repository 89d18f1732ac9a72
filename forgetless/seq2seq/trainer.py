"""Seq2seq training through ``transformers.Trainer`` with the NASH objective (Ko et al. §4.3):

    L = L_pred + λ_enc · L_h^enc + λ_dec · L_h^dec + R

``L_pred`` is the token-level KL divergence to the teacher (cross-entropy with the labels when there
is no teacher), ``L_h`` hidden-state MSE between paired student / teacher layers, ``R`` the
Lagrangian sparsity term of the hard-concrete masks (``l0masks.py``) with the target raised
linearly during warm-up. Only ``compute_loss`` / ``create_optimizer`` / ``log`` are overridden, so
checkpoints and resume come from the library; the masks live inside the model (``model.l0_masks``)
and are checkpointed with it.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
import transformers
from torch import nn
from transformers.trainer_utils import get_last_checkpoint

from ..errors import ConfigError
from ..models.adapters import get_adapter
from . import hardconcrete as hc
from .data import PairSet, Seq2SeqCollator, encode_pairs
from .selection import LayerOutputs, hidden_mse, kd_loss

log = logging.getLogger(__name__)


@dataclass
class Seq2SeqTrainConfig:
    epochs: float = 3.0
    max_steps: int = -1
    learning_rate: float = 5e-5
    batch_size: int = 16
    max_source_length: int = 128
    max_target_length: int = 32
    weight_decay: float = 0.01
    seed: int = 0
    save_steps: int = 500
    logging_steps: int = 50
    progress: bool = False
    freeze_embeddings: bool = False  # CPU budget: no gradients / Adam state for the vocabulary matrices
    # name substring → learning rate, e.g. {"crossattention": 1e-3} for a warm start's new modules
    lr_overrides: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.epochs <= 0 and self.max_steps <= 0:
            raise ConfigError("epochs must be > 0 (or max_steps set)")
        if self.batch_size < 1 or self.max_source_length < 4 or self.max_target_length < 2:
            raise ConfigError("batch_size must be >= 1, max lengths >= 4 (source) / 2 (target)")
        if not 0 < self.learning_rate < 1:
            raise ConfigError(f"learning_rate {self.learning_rate} out of range (0, 1)")


@dataclass
class DistillSpec:
    """Which losses to use. ``enc_pairs`` / ``dec_pairs``: (student layer, teacher layer) indices."""

    kd_weight: float = 1.0
    ce_weight: float = 0.0
    kd_temperature: float = 1.0
    kd_direction: str = "forward"
    lambda_enc: float = 0.001
    lambda_dec: float = 0.001
    enc_pairs: list = field(default_factory=list)
    dec_pairs: list = field(default_factory=list)
    target_sparsity: float = 0.0
    sparsity_warmup_steps: int = 0
    l0_learning_rate: float = 0.01


class Seq2SeqDistillTrainer(transformers.Trainer):
    def __init__(self, *args, teacher: nn.Module | None = None, spec: DistillSpec | None = None,
                 lr_overrides: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lr_overrides = lr_overrides or {}
        self.teacher = teacher.eval() if teacher is not None else None
        self.spec = spec or DistillSpec(kd_weight=0.0, ce_weight=1.0)
        self._extra: dict[str, float] = {}

    @property
    def masks(self):
        return getattr(self.model, "l0_masks", None)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        spec = self.spec
        labels = inputs["labels"]
        stacks = get_adapter(model).stacks(model)
        want_hidden = self.teacher is not None and (spec.lambda_enc > 0 or spec.lambda_dec > 0)
        with LayerOutputs(model, stacks if want_hidden else {}) as student_h:
            outputs = model(**inputs)
        loss = outputs.loss * spec.ce_weight if spec.ce_weight else outputs.logits.new_zeros(())
        if self.teacher is not None:
            teacher_stacks = get_adapter(self.teacher).stacks(self.teacher)
            with torch.no_grad(), LayerOutputs(self.teacher, teacher_stacks if want_hidden else {}) as teacher_h:
                teacher_out = self.teacher(**inputs)
            target_mask = labels != -100
            kd = kd_loss(outputs.logits, teacher_out.logits, target_mask, spec.kd_temperature, spec.kd_direction)
            loss = loss + spec.kd_weight * kd
            self._extra["kd"] = float(kd.detach())
            if want_hidden and spec.enc_pairs and spec.lambda_enc > 0:
                enc = hidden_mse(student_h.outputs["encoder"], teacher_h.outputs["encoder"], spec.enc_pairs,
                                 inputs.get("attention_mask"))
                loss = loss + spec.lambda_enc * enc
                self._extra["mse_enc"] = float(enc.detach())
            if want_hidden and spec.dec_pairs and spec.lambda_dec > 0:
                dec = hidden_mse(student_h.outputs["decoder"], teacher_h.outputs["decoder"], spec.dec_pairs, target_mask)
                loss = loss + spec.lambda_dec * dec
                self._extra["mse_dec"] = float(dec.detach())
        elif not spec.ce_weight:
            loss = outputs.loss
        if self.masks is not None and model.training:
            target = hc.target_at(self.state.global_step, spec.target_sparsity, spec.sparsity_warmup_steps)
            expected = self.masks.expected_sparsity()
            reg = hc.lagrangian_term(expected, target, self.masks.lambda_1, self.masks.lambda_2)
            loss = loss + reg
            self._extra.update(expected_sparsity=float(expected.detach()), target_sparsity=target,
                               lambda_1=float(self.masks.lambda_1.detach()),
                               lambda_2=float(self.masks.lambda_2.detach()))
        return (loss, outputs) if return_outputs else loss

    def create_optimizer(self, model=None):
        if self.optimizer is not None:
            return self.optimizer
        masks = self.masks
        mask_ids = {id(p) for p in masks.parameters()} if masks is not None else set()
        buckets: dict[tuple, list] = {}
        for name, param in self.model.named_parameters():
            if id(param) in mask_ids or not param.requires_grad:
                continue
            lr = next((v for k, v in self.lr_overrides.items() if k in name), self.args.learning_rate)
            wd = 0.0 if param.ndim < 2 or "norm" in name.lower() else self.args.weight_decay
            buckets.setdefault((lr, wd), []).append(param)
        groups = [{"params": ps, "lr": lr, "weight_decay": wd} for (lr, wd), ps in buckets.items()]
        if masks is not None:
            groups.append({"params": list(masks.log_alpha.parameters()), "lr": self.spec.l0_learning_rate,
                           "weight_decay": 0.0})
            groups.append({"params": [masks.lambda_1, masks.lambda_2], "lr": self.spec.l0_learning_rate,
                           "weight_decay": 0.0})
        self.optimizer = torch.optim.AdamW(groups, lr=self.args.learning_rate)
        return self.optimizer

    def log(self, logs, *args, **kwargs):
        logs = {**logs, **{k: round(v, 5) for k, v in self._extra.items()}}
        super().log(logs, *args, **kwargs)


def freeze_embeddings(model: nn.Module) -> None:
    """Stop training the token embeddings and the (often tied) output projection."""
    for module in (model.get_input_embeddings(), model.get_output_embeddings(),
                   model.get_encoder().get_input_embeddings()):
        if module is not None:
            module.requires_grad_(False)


def train_seq2seq(model: nn.Module, tokenizer, train: PairSet, output_dir: str | Path,
                  config: Seq2SeqTrainConfig, teacher: nn.Module | None = None, spec: DistillSpec | None = None,
                  callbacks: list | None = None, resume: bool = True) -> nn.Module:
    """Train ``model`` on ``train`` (checkpoints in ``output_dir``; a rerun resumes from the last)."""
    transformers.set_seed(config.seed)
    if config.freeze_embeddings:
        freeze_embeddings(model)
    eos = model.generation_config.eos_token_id
    eos = eos[0] if isinstance(eos, list) else eos
    rows = encode_pairs(train, tokenizer, eos, config.max_source_length, config.max_target_length)
    args = transformers.TrainingArguments(
        output_dir=str(output_dir), num_train_epochs=config.epochs, max_steps=config.max_steps,
        learning_rate=config.learning_rate, per_device_train_batch_size=config.batch_size,
        weight_decay=config.weight_decay, lr_scheduler_type="linear", seed=config.seed, data_seed=config.seed,
        save_strategy="steps", save_steps=config.save_steps, save_total_limit=1, logging_steps=config.logging_steps,
        report_to="none", remove_unused_columns=False, disable_tqdm=not config.progress,
        use_cpu=not torch.cuda.is_available(), dataloader_num_workers=0, save_only_model=False,
    )
    pad = model.generation_config.pad_token_id
    trainer = Seq2SeqDistillTrainer(model=model, args=args, train_dataset=rows, data_collator=Seq2SeqCollator(pad),
                                    teacher=teacher, spec=spec, callbacks=callbacks or [],
                                    lr_overrides=config.lr_overrides)
    last = get_last_checkpoint(str(output_dir)) if resume and os.path.isdir(output_dir) else None
    if last:
        log.info("resuming from %s", last)
    trainer.train(resume_from_checkpoint=last)
    model.eval()
    return model
