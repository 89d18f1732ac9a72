"""The seam between task kinds and model kinds: everything that differs between a model that
classifies, an encoder-decoder that generates and a decoder-only LM scored by label likelihood lives
here, and nowhere else. A *model kind* says how a model is loaded, fed, run, scored and timed:
``classifier`` (``classifier.py``), ``seq2seq`` (``seq2seq.py``: generation, and classification
text-to-text, NASH §5 / Table 11) and ``causal-lm`` (``causal_lm.py``).

``kind_for(task, method, model_kind)`` picks it: generation tasks and methods that need an
encoder-decoder (``method.seq2seq_only``) use ``seq2seq``; everything else ``classifier`` unless
``model_kind`` names one. The pipeline, methods, objectives, trainer and report card are shared by
all. Every kind's ``load_model`` takes a name, a folder, or a model object (``in_memory.py``:
checked against the kind, copied, never changed).
"""
from __future__ import annotations

from ..data.task_kinds import task_kind
from ..errors import ConfigError
from .causal_lm import CausalLMKind
from .classifier import ClassifierKind
from .seq2seq import Seq2SeqKind

KINDS = {"classifier": ClassifierKind(), "seq2seq": Seq2SeqKind(), "causal-lm": CausalLMKind()}
MODEL_KINDS = ("auto", *KINDS)


def kind_for(task, method=None, model_kind: str = "auto"):
    """The model kind a run of ``method`` (its config, ``forgetless.config.MethodConfig``) on ``task``
    uses (see the module docstring); an explicit ``model_kind`` (classifier | seq2seq | causal-lm)
    overrides the choice."""
    if model_kind not in MODEL_KINDS:
        raise ConfigError(f"unknown model kind {model_kind!r}; choose from {', '.join(MODEL_KINDS)}")
    if model_kind != "auto":
        return KINDS[model_kind]
    needed = task_kind(task).model_kind  # generation: seq2seq; an LLM suite (llm/): a causal LM as it is
    if needed is not None:
        return KINDS[needed]
    if method is not None and method.seq2seq_only:
        return KINDS["seq2seq"]
    return KINDS["classifier"]


def check_compatible(task, method, objective, model_kind: str = "auto") -> None:
    """One clear error before any work when a method or objective (their configs) does not apply to
    the run."""
    # an LLM suite calibrates on plain text: the methods that score labelled text (classification) apply
    kind_of_data = task_kind(task).methods_see
    if method is not None and kind_of_data not in method.task_types:
        raise ConfigError(f"method {method.name!r} does not apply to {task.kind} tasks (task {task.name!r}); "
                          f"it handles: {', '.join(method.task_types)}")
    kind = kind_for(task, method, model_kind)
    if method is not None and kind.name not in method.model_kinds:
        raise ConfigError(f"method {method.name!r} does not apply to a {kind.name} model; it compresses: "
                          f"{', '.join(method.model_kinds)} models")
    kind.check_task(task, kind_of_data)
    if kind.name not in objective.model_kinds:
        raise ConfigError(f"objective {objective.name!r} does not apply to a {kind.name} model (task {task.name!r}"
                          + (f", method {method.name!r}" if method is not None else "") + "); it trains: "
                          + ", ".join(objective.model_kinds) + " models")

