"""The one training loop of forgetless: ``transformers.Trainer`` with a pluggable objective.

Only ``compute_loss`` (objective + an optional method regulariser), ``training_step`` (when the
objective brings its own, e.g. adversarial ascent steps), ``create_optimizer`` (extra parameter
groups of a regulariser, e.g. L0 log α and Lagrange multipliers) and ``log`` are overridden, so
checkpointing, resume, mixed precision and multi-process training (Accelerate / torchrun: DDP,
FSDP, DeepSpeed) come from the library, for classification and generation alike.

A run whose output folder holds checkpoints resumes from the last *complete* one (a checkpoint is
marked complete after everything in it is written; one interrupted by a kill or a full disk is
removed with a message), but only if they were written by the same run (data, settings, objective,
model shape: the *checkpoint key*); checkpoints of another run are moved aside. A full disk is a
``DiskFullError`` naming the folder and the free space. Checkpoints come every ``--save-steps``,
every ``--checkpoint-minutes`` and at every epoch end; with progress on, one line estimates the
whole run from its first steps (``timing.py``).
"""
from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

import torch
import transformers
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..errors import ConfigError
from ..fsutil import atomic_write_text, disk_full_guard
from .objective import Objective
from .encode import collate, encode_for_training, split_batch
from .log_callbacks import route_logs
from .logs import library_logs_to
from .timing import StepTimeEstimate, TimedCheckpoints
from ..config import TrainConfig

log = logging.getLogger(__name__)
CHECKPOINT_KEY_FILE = "forgetless-run-key.txt"  # file name kept: checkpoints written before stay resumable
COMPLETE_FILE = "forgetless-complete"  # written last into a checkpoint folder: the checkpoint is whole
TRAINER_STATE_NAME = "trainer_state.json"


class Regularizer(Protocol):
    """A method's contribution to training (e.g. NASH's Lagrangian sparsity term)."""

    def loss(self, step: int) -> torch.Tensor: ...

    def param_groups(self) -> list[dict]: ...

    def log_values(self) -> dict[str, float]: ...


class ForgetlessTrainer(transformers.Trainer):
    """``Trainer`` whose loss is the objective's (plus a method regulariser while training)."""

    def __init__(self, *args, objective: Objective | None = None, regularizer: Regularizer | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.objective = objective or Objective()
        self.regularizer = regularizer
        self.model_accepts_loss_kwargs = False  # our loss is a batch mean: the Trainer scales it for accumulation

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        model_inputs, extras = split_batch(inputs)
        loss, outputs = self.objective.compute_loss(model, model_inputs, extras)
        if self.regularizer is not None and model.training:
            loss = loss + self.regularizer.loss(self.state.global_step)
        return (loss, outputs) if return_outputs else loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        custom = getattr(self.objective, "training_step", None)
        if custom is not None:
            return custom(self, model, inputs, num_items_in_batch)
        return super().training_step(model, inputs, num_items_in_batch)

    def create_optimizer(self, model=None):
        if self.optimizer is not None or self.regularizer is None:
            return super().create_optimizer()
        extra = self.regularizer.param_groups()
        special = {id(p) for group in extra for p in group["params"]}
        decay, no_decay = [], []
        for name, param in self.model.named_parameters():
            if id(param) in special or not param.requires_grad:
                continue
            (no_decay if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
        groups = [{"params": decay, "weight_decay": self.args.weight_decay},
                  {"params": no_decay, "weight_decay": 0.0}, *extra]
        self.optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=self.args.learning_rate)
        return self.optimizer

    def log(self, logs, *args, **kwargs):
        extra = dict(self.objective.log_values())
        if self.regularizer is not None:
            extra.update(self.regularizer.log_values())
        super().log({**logs, **{k: round(float(v), 5) for k, v in extra.items()}}, *args, **kwargs)


def training_arguments(output_dir: str | Path, config: TrainConfig) -> transformers.TrainingArguments:
    return transformers.TrainingArguments(
        output_dir=str(output_dir),
        num_train_epochs=config.epochs,
        max_steps=config.max_steps,
        learning_rate=config.learning_rate,
        per_device_train_batch_size=config.batch_size,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup_ratio,
        lr_scheduler_type="linear",
        seed=config.seed,
        data_seed=config.seed,
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=2,
        logging_steps=config.logging_steps,
        report_to=[x.strip() for x in config.report_to.split(",")] if config.report_to != "none" else "none",
        remove_unused_columns=False,
        disable_tqdm=not config.progress,
        use_cpu=config.device == "cpu" or not torch.cuda.is_available(),
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        bf16=config.bf16,
        fp16=config.fp16,
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
    )


def freeze_embeddings(model: nn.Module) -> None:
    """Stop training the token embeddings and the (often tied) output projection."""
    modules = [model.get_input_embeddings(), model.get_output_embeddings()]
    if getattr(model.config, "is_encoder_decoder", False):  # v5: a BERT classifier's get_encoder() has no embeddings
        modules.append(model.get_encoder().get_input_embeddings())
    for module in modules:
        if module is not None:
            module.requires_grad_(False)


def fine_tune(model: nn.Module, tokenizer, train_set, output_dir: str | Path, config: TrainConfig | None = None,
              objective: Objective | None = None, extras: dict[str, list] | None = None,
              callbacks: list | None = None, resume: bool = True, regularizer: Regularizer | None = None) -> nn.Module:
    """Train ``model`` on ``train_set`` (an ``ExampleSet`` or a ``PairSet``); checkpoints go to
    ``output_dir`` and a later call with the same folder and run resumes from the last one.
    Returns the trained model (same object)."""
    config = config or TrainConfig()
    objective = objective or Objective()
    transformers.set_seed(config.seed)
    if config.freeze_embeddings:
        freeze_embeddings(model)
    rows = encode_for_training(train_set, tokenizer, model, config.max_length, config.max_target_length, extras)
    trainer = ForgetlessTrainer(
        model=model,
        args=training_arguments(output_dir, config),
        train_dataset=rows,
        data_collator=functools.partial(collate, pad_token_id=tokenizer.pad_token_id or 0),  # picklable
        objective=objective,
        regularizer=regularizer,
        callbacks=[*(callbacks or []), *objective.callbacks()],
    )
    route_logs(trainer, Path(output_dir).parent / "train.log")
    if resume:  # a run that is never resumed (resume=False) needs no checkpoints beyond --save-steps
        trainer.add_callback(TimedCheckpoints(config.checkpoint_minutes))
    if config.progress:
        trainer.add_callback(StepTimeEstimate())
    trainer.add_callback(CheckpointComplete())  # last: runs after every other callback's on_save
    key = checkpoint_key(model, train_set, config, objective, extras, callbacks, regularizer)
    last = last_complete_checkpoint(output_dir) if resume and os.path.isdir(output_dir) else None
    if last and _stored_key(output_dir) != key:
        stale = Path(output_dir).with_name(Path(output_dir).name + f".stale-{int(time.time())}")
        log.warning("%s holds checkpoints of a different run (settings, data or model changed); moved them to %s "
                    "and training starts fresh", output_dir, stale)
        os.replace(output_dir, stale)
        last = None
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(output_dir) / CHECKPOINT_KEY_FILE, key)
    if last:
        log.info("resuming from %s", last)
        print(f"[forgetless] resuming from {Path(last).name} in {output_dir}", file=sys.stderr, flush=True)
    with disk_full_guard(output_dir, "training into", "rerun: training resumes from the last complete checkpoint"), \
            library_logs_to(Path(output_dir).parent / "train.log", Path(output_dir).name):
        trainer.train(resume_from_checkpoint=last)
    model.eval()
    return trainer.model if not hasattr(trainer.model, "module") else trainer.model.module


def checkpoint_key(model, train_set, config: TrainConfig, objective, extras, callbacks, regularizer=None) -> str:
    """What a checkpoint folder may be resumed for: same data, settings, objective (and its
    config), extra columns, callbacks, regulariser and model architecture (parameter names and
    shapes)."""
    digest = hashlib.sha256()
    digest.update(json.dumps(config.identity(), sort_keys=True).encode())
    digest.update(train_set.fingerprint().encode())
    digest.update(type(objective).__name__.encode() if objective is not None else b"ce")
    config_of = getattr(objective, "config", None)
    digest.update(json.dumps(asdict(config_of) if hasattr(config_of, "__dataclass_fields__") else None,
                             sort_keys=True, default=str).encode())
    digest.update(",".join(sorted(extras or {})).encode())
    # callbacks of forgetless methods change training (e.g. magnitude pruning's schedule); others
    # (progress, logging, a caller's instrumentation) do not and must not block a resume
    digest.update(",".join(type(c).__name__ for c in callbacks or []
                           if type(c).__module__.startswith("forgetless")).encode())
    digest.update(type(regularizer).__name__.encode())
    for name, p in model.named_parameters():
        digest.update(f"{name}:{tuple(p.shape)}".encode())
    if extras:
        digest.update(json.dumps({k: list(map(str, v[:50])) for k, v in extras.items()}, sort_keys=True).encode())
    return digest.hexdigest()[:20]


def checkpoint_dir(args, state) -> Path:
    """The folder the Trainer writes (or resumed from) for the current global step."""
    return Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"


def save_checkpoint_tensors(args, state, filename: str, tensors: dict[str, torch.Tensor]) -> None:
    """A callback's own state (safetensors) into the checkpoint being written, restored on resume."""
    folder = checkpoint_dir(args, state)
    if folder.is_dir() and state.is_world_process_zero:
        save_file({k: v.detach().cpu().clone().contiguous() for k, v in tensors.items()}, str(folder / filename))


def load_checkpoint_tensors(args, state, filename: str, what: str) -> dict[str, torch.Tensor]:
    path = checkpoint_dir(args, state) / filename
    if not path.is_file():
        raise ConfigError(f"resuming at step {state.global_step} needs {what} from {path}, which is missing; "
                          f"delete {args.output_dir} to train from the start")
    return load_file(str(path))


class CheckpointComplete(TrainerCallback):
    """Marks a checkpoint complete once everything in it is written (``on_save`` runs after the
    Trainer has written weights, optimizer, scheduler, RNG and trainer state, and after the other
    callbacks' ``on_save``). A checkpoint without the mark was interrupted (kill, full disk)."""

    def on_save(self, args, state, control, **kwargs):
        if checkpoint_dir(args, state).is_dir():
            atomic_write_text(checkpoint_dir(args, state) / COMPLETE_FILE, f"{state.global_step}\n")


def last_complete_checkpoint(output_dir) -> str | None:
    """The newest complete checkpoint in ``output_dir``; incomplete ones (no completion mark, or
    no readable ``trainer_state.json``) are removed with a warning, so a kill or a full disk while
    a checkpoint is written never blocks a resume."""
    folders = sorted((p for p in Path(output_dir).glob(f"{PREFIX_CHECKPOINT_DIR}-*")
                      if p.is_dir() and p.name.split("-")[-1].isdigit()),
                     key=lambda p: int(p.name.split("-")[-1]), reverse=True)
    for folder in folders:
        if _complete(folder):
            return str(folder)
        log.warning("%s is an incomplete checkpoint (interrupted while it was written); removed, resuming "
                    "from an earlier one", folder)
        print(f"[forgetless] skipping incomplete checkpoint {folder} (interrupted while written)",
              file=sys.stderr, flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    return None


def _complete(folder: Path) -> bool:
    if not (folder / COMPLETE_FILE).is_file():
        return False
    try:
        json.loads((folder / TRAINER_STATE_NAME).read_text())
    except (OSError, ValueError):
        return False
    return True


def _stored_key(output_dir) -> str | None:
    path = Path(output_dir) / CHECKPOINT_KEY_FILE
    return path.read_text().strip() if path.is_file() else None
