"""The compression-method contract: every stage the pipeline runs is declared here, so the pipeline
names no method and probes nothing (the lifecycle of llm-compressor's modifiers and torchao's
``prepare / squash_mask``).

``compress`` runs ``prepare`` (score, mask or cut) → the recovery stage ``recover`` when
``config.recovers`` (a fine-tune with the method's ``callbacks``; skipped for post-training
methods and ``recovery: none``) → ``finalize``, which returns a plain model with weights physically
removed where the method is structured (heads, FFN units, layers), or exactly-zero weights where it
is unstructured (magnitude pruning). After the run the pipeline asks for ``artifacts()`` (JSON saved
with the model), ``plots(out_dir)`` and ``report_section()`` (a card section the method adds).

A method's name and capabilities (task types, model kinds, default objective, ...) live on its
config class (``methods/<name>/config.py``), read through ``self.config``. A method may give the
Trainer a regulariser (extra loss term and parameter groups, e.g. NASH's Lagrangian) through
``ctx.train(..., regularizer=...)`` and record in ``ctx.layer_map`` which teacher layer each kept
layer came from (for hidden-state distillation).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from torch import nn

from ..config import MethodConfig
from ..data.task import Task
from ..errors import ConfigError
from ..fsutil import atomic_write_json
from ..training.trainer import TrainConfig, fine_tune


@dataclass
class CompressionContext:
    """What a method may use: the task, tokenizer, fine-tuned teacher, objective, training config,
    and a work folder for checkpoints and caches. ``train`` fine-tunes with resume support and
    records every run in ``fine_tunes`` (for the card's training section).

    ``forgetless.apply`` gives a context without a task, teacher or work folder (None): it runs only
    methods that train nothing (``config.recovers`` false) and read no labelled task
    (``config.calibration`` "none" or "text"); ``calibration`` then holds the calibration texts."""

    task: Task | None
    tokenizer: Any
    teacher: nn.Module | None
    work_dir: Path | None
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
    fine_tunes: list[dict] = field(default_factory=list)  # {name, epochs, max_steps} of every ``train`` run
    calibration: list[str] | None = None  # calibration texts given instead of the task's (--calibration-data)

    @property
    def train_set(self):
        """The training set as the model kind feeds it (label words as targets for seq2seq models)."""
        return self.kind.training_set(self.task, self.tokenizer) if self.kind is not None else self.task.train

    def train(self, model: nn.Module, name: str, callbacks: list | None = None,
              config: TrainConfig | None = None, objective: Callable | None = None,
              extras: dict[str, list] | None = None, regularizer=None) -> nn.Module:
        """Fine-tune ``model`` on the task's training set (checkpoints in ``work_dir/name``)."""
        if self.task is None or self.work_dir is None:
            raise ConfigError(f"{name}: training needs a labelled task and a work folder; this run has none "
                              "(forgetless.apply trains nothing: give the method recovery='none', or use "
                              "forgetless.compress with a task)")
        tc = config or self.train_config
        self.fine_tunes.append({"name": name, "epochs": float(tc.epochs) if tc.max_steps <= 0 else None,
                                "max_steps": tc.max_steps if tc.max_steps > 0 else None})
        return fine_tune(model, self.tokenizer, self.train_set, self.work_dir / name, tc,
                         objective or self.objective,
                         extras if extras is not None else self.objective_extras, callbacks,
                         regularizer=regularizer)

    def keep_json(self, name: str, data) -> None:
        """Keep ``data`` (scores, decisions) as ``work_dir/name`` for inspection; nothing is written
        when the run has no work folder (``forgetless.apply``, an in-memory run that trains nothing)."""
        if self.work_dir is not None:
            atomic_write_json(Path(self.work_dir) / name, data)

    def probe_inputs(self, n: int) -> dict | None:
        """Tokenized inputs of the first ``n`` training examples (for masked == sliced checks)."""
        return self.kind.probe_inputs(self.tokenizer, self.task, n, self.train_config.max_length) \
            if self.kind is not None else None


class CompressionMethod:
    """Base class: ``compress`` = ``prepare`` → ``recover`` (when ``config.recovers``) →
    ``finalize``. Override the stages; every one has a default that does nothing."""

    def __init__(self, config: MethodConfig):
        if not isinstance(config, MethodConfig):
            raise ConfigError(f"{type(self).__name__} takes its method config (a MethodConfig), got "
                              f"{type(config).__name__}")
        self.config = config
        self.record: dict = {}  # what the method scored and decided (its artifacts, its scores file in work_dir)

    # ----- stages --------------------------------------------------------------------------------
    def check_fits(self, model: nn.Module) -> None:
        """The options against the model's modules, before any work (``targets`` / ``ignore``, widths, formats);
        shapes only, so a meta-device build of the model will do (``validate.check_modules``). Nothing by default."""

    def prepare(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """Before training: score, install masks, or cut (returns the model to train)."""
        return model

    def callbacks(self, model: nn.Module, ctx: CompressionContext) -> list:
        """``TrainerCallback``s for the recovery fine-tune (e.g. a pruning schedule)."""
        return []

    def recover(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """The recovery stage (run only when ``config.recovers``): fine-tune on the task."""
        return ctx.train(model, f"train-{self.config.name}", callbacks=self.callbacks(model, ctx))

    def finalize(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        """After training: a plain model (masks folded, units physically removed); idempotent."""
        return model

    def compress(self, model: nn.Module, ctx: CompressionContext) -> nn.Module:
        model = self.prepare(model, ctx)
        if self.config.recovers:
            model = self.recover(model, ctx)
        return self.finalize(model, ctx)

    # ----- what the run reports ------------------------------------------------------------------
    def artifacts(self) -> dict:
        """JSON-able scores and decisions saved with the model (empty: nothing to save)."""
        return {}

    def plots(self, out_dir) -> list[Path]:
        """Figures written into ``out_dir`` (paths), none by default."""
        return []

    def report_section(self) -> dict | None:
        """A section the method adds to the report card (``{name: value}``), or None."""
        return None

    def describe(self) -> dict:
        """Method name and config for the report card."""
        return {"name": self.config.name, "config": asdict(self.config)}
