"""Fine-tuning through ``transformers.Trainer`` with a pluggable loss.

Only ``compute_loss`` is overridden, so checkpointing, resume, mixed precision and multi-process
training (Accelerate / torchrun: DDP, FSDP, DeepSpeed) come from the library. A run whose output
folder holds checkpoints resumes from the last one.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import torch
import transformers
from torch import nn
from transformers.trainer_utils import get_last_checkpoint

from ..data.task import ExampleSet
from ..errors import ConfigError
from ..fsutil import atomic_write_text
from .encode import Collator, encode

Objective = Callable[[torch.Tensor, torch.Tensor, dict], torch.Tensor]
log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    """Fine-tuning hyper-parameters (defaults follow the data README's calibration runs)."""

    epochs: float = 3.0
    learning_rate: float = 5e-5
    batch_size: int = 32
    max_length: int = 128
    weight_decay: float = 0.01
    warmup_ratio: float = 0.0
    seed: int = 0
    save_steps: int = 200
    logging_steps: int = 50
    max_steps: int = -1
    progress: bool = True

    def __post_init__(self) -> None:
        if self.epochs <= 0 and self.max_steps <= 0:
            raise ConfigError("epochs must be > 0 (or max_steps set)")
        if self.batch_size < 1 or self.max_length < 8:
            raise ConfigError("batch_size must be >= 1 and max_length >= 8")
        if not 0 < self.learning_rate < 1:
            raise ConfigError(f"learning_rate {self.learning_rate} out of range (0, 1)")


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, batch: dict) -> torch.Tensor:
    return nn.functional.cross_entropy(logits, labels)


class ForgetlessTrainer(transformers.Trainer):
    """``Trainer`` whose loss is ``objective(logits, labels, batch)``; ``batch`` holds the extra
    per-example columns (teacher probabilities, difficulty, weights, index)."""

    def __init__(self, *args, objective: Objective | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.objective = objective or cross_entropy

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        model_inputs = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        extras = {k: v for k, v in inputs.items() if k not in model_inputs and k != "labels"}
        outputs = model(**model_inputs)
        loss = self.objective(outputs.logits, inputs["labels"], extras)
        return (loss, outputs) if return_outputs else loss


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
        report_to="none",
        remove_unused_columns=False,
        disable_tqdm=not config.progress,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
    )


def fine_tune(model: nn.Module, tokenizer, train_set: ExampleSet, output_dir: str | Path,
              config: TrainConfig | None = None, objective: Objective | None = None,
              extras: dict[str, list] | None = None, callbacks: list | None = None,
              resume: bool = True) -> nn.Module:
    """Train ``model`` on ``train_set``; checkpoints go to ``output_dir`` and a later call with the
    same folder resumes from the last one. Returns the trained model (same object)."""
    config = config or TrainConfig()
    transformers.set_seed(config.seed)
    rows = encode(train_set, tokenizer, config.max_length, extras)
    trainer = ForgetlessTrainer(
        model=model,
        args=training_arguments(output_dir, config),
        train_dataset=rows,
        data_collator=Collator(tokenizer),
        objective=objective,
        callbacks=callbacks or [],
    )
    key = run_key(model, train_set, config, objective, extras, callbacks)
    last = get_last_checkpoint(str(output_dir)) if resume and os.path.isdir(output_dir) else None
    if last and _stored_key(output_dir) != key:
        stale = Path(output_dir).with_name(Path(output_dir).name + f".stale-{int(time.time())}")
        log.warning("%s holds checkpoints of a different run (settings, data or model changed); moved them to %s "
                    "and training starts fresh", output_dir, stale)
        os.replace(output_dir, stale)
        last = None
    Path(output_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(output_dir) / RUN_KEY_FILE, key)
    if last:
        log.info("resuming from %s", last)
    trainer.train(resume_from_checkpoint=last)
    model.eval()
    return trainer.model if not hasattr(trainer.model, "module") else trainer.model.module


RUN_KEY_FILE = "forgetless-run-key.txt"


def run_key(model, train_set: ExampleSet, config: TrainConfig, objective, extras, callbacks) -> str:
    """What a checkpoint folder may be resumed for: same data, settings, objective, extra columns,
    callbacks and model architecture (parameter names and shapes)."""
    digest = hashlib.sha256()
    digest.update(json.dumps({k: v for k, v in asdict(config).items() if k != "progress"}, sort_keys=True).encode())
    digest.update(train_set.fingerprint().encode())
    digest.update(type(objective).__name__.encode() if objective is not None else b"ce")
    digest.update(",".join(sorted(extras or {})).encode())
    digest.update(",".join(type(c).__name__ for c in callbacks or []).encode())
    for name, p in model.named_parameters():
        digest.update(f"{name}:{tuple(p.shape)}".encode())
    if extras:
        digest.update(json.dumps({k: list(map(str, v[:50])) for k, v in extras.items()}, sort_keys=True).encode())
    return digest.hexdigest()[:20]


def _stored_key(output_dir) -> str | None:
    path = Path(output_dir) / RUN_KEY_FILE
    return path.read_text().strip() if path.is_file() else None
