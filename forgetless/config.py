"""The configuration tree of a run: the one schema of forgetless (standard library only).

``RunConfig`` holds the task (``TaskConfig``), the method (a registered ``MethodConfig``, e.g.
``HeadsConfig(ratio=0.5)``), methods stacked after it (``then``), the objective (an
``ObjectiveConfig``), training (``TrainConfig``), evaluation (``EvalConfig``), the speed benchmark
(``SpeedConfig``) and CLEVER (``CleverConfig``). The command line is generated from it
(``cli/parser.py``), a recipe is it as YAML (``recipes/``; ``--set train.learning_rate=1e-4``), and
Python builds it directly. Every range is checked when a config is built (``options.Config``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .options import Config, option
from .ranges import MAX_TOKENS

MODEL_KINDS = ("classifier", "seq2seq", "causal-lm")
TASK_TYPES = ("classification", "generation")
SEED = {"low": 0, "high": 2**32 - 1}


# ----- what a method and an objective declare ---------------------------------------------------------
@dataclass
class MethodConfig(Config):
    """Base of a compression method's config. Class attributes declare what the pipeline needs to
    know without importing the method: the task types and model kinds it applies to, whether it
    needs an encoder-decoder, its default objective, whether it removes weights (``structured``),
    whether the run needs CLEVER estimates, and a small ``smoke`` config for the contract test."""

    name: ClassVar[str] = ""
    task_types: ClassVar[tuple[str, ...]] = ("classification",)
    model_kinds: ClassVar[tuple[str, ...]] = MODEL_KINDS
    seq2seq_only: ClassVar[bool] = False
    default_objective: ClassVar[str] = "ce"
    structured: ClassVar[bool] = True
    needs_clever: ClassVar[bool] = False
    smoke: ClassVar[dict] = {}

    def check_model(self, dims: dict, where: str) -> None:
        """Options against the model's shape (``dims``: layers, decoder_layers, heads, max_positions;
        a value may be None); raise ``OptionError`` naming the flag and the valid range."""

    @property
    def recovers(self) -> bool:
        """Whether the method trains after (or while) compressing (``recovery`` option, if any)."""
        return getattr(self, "recovery", "fine-tune") != "none"


def recovery_option(help: str = "fine-tune: train after (or while) compressing; none: post-training, nothing "
                                  "is trained"):
    """The ``recovery`` field of a method that can run post-training (one field object per class)."""
    return option("fine-tune", choices=("fine-tune", "none"), help=help)


@dataclass
class ObjectiveConfig(Config):
    """Base of a training objective's config; its options are flags ``--objective-<field>``."""

    name: ClassVar[str] = ""
    flag_prefix: ClassVar[str] = "objective-"
    model_kinds: ClassVar[tuple[str, ...]] = ("classifier",)
