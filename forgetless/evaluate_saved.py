"""``forgetless evaluate``: scores of a saved model on every set of a task, without the training
and reporting stack (so the command starts in about the time of importing transformers)."""
from __future__ import annotations

from pathlib import Path

from .data.task import Task
from .evaluate.config import EvalConfig
from .evaluate.size import parameter_counts
from .fsutil import atomic_write_json
from .kinds import KINDS, kind_for
from .models.io import is_forgetless_folder, read_manifest


def evaluate_saved(model_path: str, task: Task, out: str | Path | None = None, batch_size: int = 64,
                   max_length: int = 128) -> dict:
    """Scores of a saved model (forgetless folder or HF folder) on every set of ``task``."""
    kind = kind_for(task)
    if is_forgetless_folder(model_path) and read_manifest(model_path)["metadata"].get("kind") == "seq2seq":
        kind = KINDS["seq2seq"]
    model, tokenizer = kind.load_model(model_path, task)
    result = kind.evaluate(model, tokenizer, task, EvalConfig(batch_size=batch_size), max_length)
    result.pop("predictions")
    result["params"] = parameter_counts(model)
    if out:
        atomic_write_json(out, result)
    return result
