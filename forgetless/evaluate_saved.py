"""``forgetless evaluate``: scores of a saved model on every set of a task, without the training
and reporting stack (so the command starts in about the time of importing transformers)."""
from __future__ import annotations

from pathlib import Path

from .data.task import Task
from .errors import ConfigError
from .config import EvalConfig
from .metrics.size import parameter_counts
from .fsutil import atomic_write_json
from .kinds import KINDS, kind_for
from .models.checks import check_model_folder
from .models.io import is_forgetless_folder, read_manifest
from .models.loading import resolve_model_path
from .outputs import WRITTEN_BY, check_output


def evaluate_saved(model_path: str, task: Task, out: str | Path | None = None, batch_size: int = 64,
                   max_length: int = 128, overwrite: bool = False, keep_predictions: bool = False,
                   model_kind: str = "auto", device: str | None = None) -> dict:
    """Scores of a saved model (forgetless folder or HF folder) on every set of ``task``, run as the
    model kind ``saved_kind`` picks; with ``out`` also written there as JSON (a new file, or one an
    earlier evaluate wrote with ``overwrite``); ``keep_predictions``: also the per-example
    ``predictions`` (a paired comparison needs them); ``device``: where the model runs (None: the CPU)."""
    if out is not None:
        check_output(out, "--json", command="evaluate", inputs={"MODEL_PATH": model_path}, overwrite=overwrite,
                     is_file=True)
    kind = saved_kind(model_path, task, model_kind)
    result = evaluate_model(model_path, task, kind, None, batch_size, max_length, keep_predictions, device)
    if out:
        atomic_write_json(out, {WRITTEN_BY: "forgetless evaluate", **result})
    return result


def saved_kind(model_path: str, task: Task, model_kind: str = "auto"):
    """The model kind that scores a saved model on ``task``: ``model_kind`` when given, else what the
    folder holds: an encoder-decoder (``seq2seq``), a causal language model (``causal-lm``: a
    classification task scored zero-shot by label likelihood, as ``compress --model-kind causal-lm``
    scores it), else the task's (a classifier). A model trained on another kind of task (fine-tuned, or a
    method's recovery: ``save.trained_on_task``; one compressed without training is still its base) is one
    ``ConfigError`` (a kind that cannot score the task: ``check_kind_fits``)."""
    metadata = read_manifest(model_path)["metadata"] if is_forgetless_folder(model_path) else {}
    trained = metadata.get("trained_on_task", True)  # folders saved before it was recorded: as if trained
    if trained and metadata.get("task_kind") not in (None, task.kind):
        raise ConfigError(f"MODEL_PATH {model_path}: trained on the {metadata['task_kind']} task "
                          f"{metadata.get('task')!r}; its scores on the {task.kind} task {task.name!r} would mean "
                          "nothing (choose a task of the same kind)")
    recorded = KINDS.get(metadata.get("kind"))  # the kind that saved a forgetless folder (None: not recorded)
    if model_kind != "auto":
        kind = kind_for(task, None, model_kind)
    elif recorded is not None and recorded.seq2seq:
        kind = recorded
    elif _holds_causal_lm(model_path):  # a classifier's folder holds a …ForSequenceClassification
        kind = KINDS["causal-lm"]
    else:
        kind = kind_for(task)
    # an LLM suite of a BERT folder: one line, not BERT scored as an LM
    kind.check_config(model_path, flag=f"--model-kind {kind.name}" if model_kind != "auto" else f"--task {task.name}")
    return kind


def check_kind_fits(kind, task: Task, model) -> None:
    """The model kind scores ``task``: a causal LM classification tasks (zero-shot) and LLM suites, an
    encoder-decoder generation and classification tasks, a classifier classification tasks; one
    ``ConfigError`` naming the model otherwise (before it is loaded)."""
    what = f"MODEL_PATH {model}" if isinstance(model, (str, Path)) else f"model: the given {type(model).__name__}"
    if task.kind not in kind.task_kinds:
        raise ConfigError(f"{what}: {kind.described}; forgetless scores one on {' and '.join(kind.task_kinds)} tasks, "
                          f"not on the {task.kind} task {task.name!r}")


def _holds_causal_lm(model_path: str) -> bool:
    """The folder's model is a ``…ForCausalLM`` (its manifest's class, else ``config.json``'s architectures)."""
    path = Path(resolve_model_path(model_path))
    if is_forgetless_folder(path):
        return read_manifest(path)["model_class"].endswith("ForCausalLM")
    if not (path / "config.json").is_file():
        return False
    return any(str(a).endswith("ForCausalLM") for a in getattr(check_model_folder(path), "architectures", None) or [])


def evaluate_model(model, task: Task, kind, tokenizer=None, batch_size: int = 64, max_length: int = 128,
                   keep_predictions: bool = False, device: str | None = None) -> dict:
    """Scores of ``model`` (a name, a folder or a model object: ``kind.load_model``) on every set of
    ``task`` and its parameter counts (``params``); the per-example ``predictions`` when kept. ``device``: where
    it runs (None: where it was loaded or given)."""
    check_kind_fits(kind, task, model)
    model, tokenizer = kind.load_model(model, task, tokenizer=tokenizer)
    model = model.to(device) if device else model
    return evaluate_loaded(model, tokenizer, task, kind, batch_size, max_length, keep_predictions)


def evaluate_loaded(model, tokenizer, task: Task, kind, batch_size: int = 64, max_length: int = 128,
                    keep_predictions: bool = False) -> dict:
    """``evaluate_model`` of a model ``kind.load_model`` loaded already (scored as it is, not copied)."""
    result = kind.evaluate(model, tokenizer, task, EvalConfig(batch_size=batch_size), max_length)
    if not keep_predictions:
        result.pop("predictions")
    return {**result, "params": parameter_counts(model)}
