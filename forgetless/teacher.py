"""The base model of a run (the *teacher*: the uncompressed model every number is compared with):
fine-tuned on the task and kept in the shared cache, loaded from ``--teacher``, or taken as it is
(``--base as-is``: post-training compression of a pretrained model, nothing trained or written)."""
from __future__ import annotations

from pathlib import Path

import transformers

from .config import RunConfig
from .data.task import Task
from .fsutil import remove_leftovers
from .kinds import kind_for
from .models.io import is_forgetless_folder, load_model, read_manifest, save_model
from .models.loading import resolve_model_path
from .objectives.cache import cache_key
from .offline_models import provenance
from .outputs import cache_root, teacher_lock
from .progress import stage
from .training.trainer import fine_tune


def teacher_key(task: Task, config: RunConfig, kind) -> str:
    """What a cached teacher was trained for: task content (training set and labels), model (for a
    local folder also its files' names, sizes and modification times), model kind, the training
    settings that decide the weights (``TrainConfig.identity``), seed."""
    train_config = config.teacher_train or config.train
    settings = train_config.identity()  # checkpoint cadence, logging and progress do not change the weights
    local = Path(config.model)
    files = sorted((str(f.relative_to(local)), f.stat().st_size, f.stat().st_mtime_ns)
                   for f in local.rglob("*") if f.is_file()) if local.is_dir() else None  # a changed folder: new key
    return cache_key({"model": config.model, "files": files, "kind": kind.name, "task": task.train.fingerprint(),
                      "labels": task.label_names, "train": settings, "seed": config.seed})


def train_teacher(task: Task, config: RunConfig, work_dir: Path | None, kind=None, model=None, tokenizer=None):
    """``(teacher, tokenizer, info)``: fine-tune (or load) the uncompressed model on the task. A
    finished teacher is kept in the shared cache (``cache_root()/teachers/<key>``, key:
    ``teacher_key``) and reused by any run with the same key, whatever its output folder;
    ``config.teacher`` is only read. A model object (``model``, with its ``tokenizer``;
    ``config.model`` then holds its label) is copied, never changed; its teacher is trained and kept
    in ``work_dir/teacher``, not in the shared cache. ``info``: where the teacher came from."""
    kind = kind or kind_for(task)
    source = model if model is not None else config.model
    if config.base == "as-is":  # post-training compression: nothing is trained, nothing is written
        stage(f"base: {config.model} as it is (no fine-tuning)")
        loaded, tokenizer = kind.load_model(source, task, config.seed, tokenizer)
        info = as_is_info(config.model) if model is None else \
            {"source": config.model, "reused": False, "as_is": True, "path": None}
        return loaded, tokenizer, info
    if config.teacher:
        model, tokenizer = kind.load_model(config.teacher, task, config.seed)
        stage(f"using the given teacher {config.teacher}")
        return model, tokenizer, {"source": config.teacher, "reused": True, "path": str(config.teacher)}
    train_config = config.teacher_train or config.train
    key = teacher_key(task, config, kind)
    folder = work_dir / "teacher" if model is not None else cache_root() / "teachers" / key
    with teacher_lock(folder):  # a second run needing this teacher waits here, then reuses it
        remove_leftovers(folder.parent, (f".{key}.tmp-*", f".{key}.old-*"))  # of a killed save of this teacher
        if is_forgetless_folder(folder) and read_manifest(folder)["metadata"].get("key") == key:
            loaded, saved_tokenizer = load_model(folder)
            stage(f"reusing teacher from {folder}")
            return loaded, saved_tokenizer or tokenizer or task.tokenizer, \
                {"source": config.model, "reused": True, "path": str(folder)}
        stage(f"fine-tuning the teacher ({train_config.epochs:g} epoch(s)); it will be kept in {folder}")
        transformers.set_seed(config.seed)
        loaded, tokenizer = kind.load_model(source, task, config.seed, tokenizer)
        loaded = fine_tune(loaded, tokenizer, kind.training_set(task, tokenizer), work_dir / "train-teacher",
                           train_config)
        save_model(loaded, folder, tokenizer, metadata={"key": key, "role": "teacher", "kind": kind.name,
                                                       "model": config.model, "task": task.name,
                                                       "task_kind": task.kind})
        return loaded, tokenizer, {"source": config.model, "reused": False, "path": str(folder)}


def as_is_info(model: str) -> dict:
    """Where an as-is base came from; a converted base (an offline LLM: ``--model smollm2``) adds its provenance."""
    path = Path(resolve_model_path(model))
    info = {"source": model, "reused": False, "as_is": True, "path": str(path) if path.is_dir() else None}
    recorded = provenance(path) if path.is_dir() else None
    if recorded:
        info["provenance"] = recorded
    return info
