"""The compression-method contract: ``prepare → (training with callbacks) → finalize``.

Each method is a class registered by name with a config dataclass (``@METHODS.register``).
``compress`` runs the lifecycle; ``finalize`` returns a plain model with weights physically
removed where the method is structured (heads, FFN units, layers), or exactly-zero weights
where it is unstructured (magnitude pruning). A method declares the task ``kinds`` it applies to,
whether it needs an encoder-decoder (``seq2seq_only``) and its ``default_objective``; it may give
the Trainer a regulariser (extra loss term and parameter groups, e.g. NASH's Lagrangian) through
``ctx.train(..., regularizer=...)`` and record in ``ctx.layer_map`` which teacher layer each kept
layer came from (for hidden-state distillation).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from torch import nn

from ..data.task import Task
from ..errors import ConfigError
from ..training.trainer import TrainConfig, fine_tune

from ..registry import METHODS  # noqa: E402

RECOVERIES = ("fine-tune", "none")  # the `recovery` option: train after compressing, or not (post-training)


def check_recovery(value: str) -> None:
    if value not in RECOVERIES:
        raise ConfigError(f"--recovery: {value!r} is not one of {', '.join(RECOVERIES)}")


def legacy_recovery(fine_tune) -> str:
    """``recovery`` from the old ``fine_tune: true|false`` of recipes and saved ``model/recipe.yaml``."""
    text = str(fine_tune).strip().lower()
    if text not in ("true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"fine_tune (old name of recovery): expected true or false, got {fine_tune!r}")
    return "fine-tune" if text in ("true", "1", "yes") else "none"


@dataclass
class CompressionContext:
    """What a method may use: the task, tokenizer, fine-tuned teacher, objective, training config,
    and a work folder for checkpoints and caches. ``train`` fine-tunes with resume support."""

    task: Task
    tokenizer: Any
    teacher: nn.Module
    work_dir: Path
    train_config: TrainConfig
    objective: Callable | None = None
    objective_extras: dict[str, list] | None = None
    seed: int = 0
    device: str = "cpu"
    base_model: str = "minilm"  # the uncompressed model's name or path (e.g. for JTT's first model)
    notes: list[str] = field(default_factory=list)  # free text copied into the report card
    cache_dir: Path | None = None  # shared cache (teacher probabilities, difficulty, JTT error sets)
    kind: Any = None  # the model kind (``forgetless.kinds``): how the model is fed and run
    layer_map: dict[str, list[int]] | None = None  # stack → teacher layer index of each kept layer

    @property
    def train_set(self):
        """The training set as the model kind feeds it (label words as targets for seq2seq models)."""
        return self.kind.training_set(self.task, self.tokenizer) if self.kind is not None else self.task.train

    def train(self, model: nn.Module, name: str, callbacks: list | None = None,
              config: TrainConfig | None = None, objective: Callable | None = None,
              extras: dict[str, list] | None = None, regularizer=None) -> nn.Module:
        """Fine-tune ``model`` on the task's training set (checkpoints in ``work_dir/name``)."""
        return fine_tune(model, self.tokenizer, self.train_set, self.work_dir / name,
                         config or self.train_config, objective or self.objective,
                         extras if extras is not None else self.objective_extras, callbacks,
                         regularizer=regularizer)

    def probe_inputs(self, n: int) -> dict | None:
        """Tokenized inputs of the first ``n`` training examples (for masked == sliced checks)."""
        return self.kind.probe_inputs(self.tokenizer, self.task, n, self.train_config.max_length) \
            if self.kind is not None else None


class CompressionMethod:
    """Base class. Override ``prepare``/``callbacks``/``finalize``, or ``compress`` as a whole."""

    name = "base"
    structured = True  # False: weights are zeroed, not removed (no speedup expected)
    kinds: tuple[str, ...] = ("classification",)  # task kinds the method applies to
    seq2seq_only = False  # True: needs an encoder-decoder model (classification tasks run text-to-text)
    model_kinds: tuple[str, ...] = ("classifier", "seq2seq", "causal-lm")  # model kinds it compresses
    default_objective = "ce"

    def __init__(self, config: Any = None):
        self.config = config

    def prepare(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        return model

    def callbacks(self, model: nn.Module, ctx: CompressionContext) -> list:
        return []

    def finalize(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        return model

    def recovers(self) -> bool:
        """Whether the method trains after (or while) compressing: a config's ``recovery`` option
        (``fine-tune`` | ``none``); methods without that option always train."""
        return getattr(self.config, "recovery", "fine-tune") != "none"

    def compress(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        model = self.prepare(model, ctx)
        if self.recovers():
            model = ctx.train(model, f"train-{self.name}", callbacks=self.callbacks(model, ctx))
        return self.finalize(model, ctx)

    def describe(self) -> dict:
        """Method name and config for the report card."""
        from dataclasses import asdict, is_dataclass

        return {"name": self.name, "config": asdict(self.config) if is_dataclass(self.config) else {}}
