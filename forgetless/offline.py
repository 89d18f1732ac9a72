"""LLM task names whose data only the Hugging Face hub has, refused while the hub is off
(``HF_HUB_OFFLINE=1``), before any data or model is read: ``--lm-eval-tasks hellaswag`` otherwise
retries the hub for minutes and ends in a ``ConnectionError`` (issue 42), where the shipped offline copy
``hellaswag_offline`` reads the data folder.

A name the include folders define (the shipped ``*_offline`` YAMLs, ``--lm-eval-include``) reads local
files. Any other is lm-eval's own task: its YAML's ``dataset_path`` names a hub dataset (or one of
datasets' file builders, ``json``, ``parquet`` …, which read local files). A hub dataset is reachable
offline only from datasets' cache (``HF_DATASETS_CACHE``: ``owner___name``) or the hub's
(``HF_HUB_CACHE``: ``datasets--owner--name``). Indexing lm-eval's own tasks takes seconds (9 s here);
it runs only for a name the include folders lack, and the task loader reuses that index.
"""
from __future__ import annotations

from pathlib import Path

from .data.hub import hub_offline
from .data.registry import data_root
from .errors import DataError

FILE_BUILDERS = ("json", "csv", "parquet", "text", "arrow", "pandas", "xml", "webdataset")


def check_offline_tasks(task) -> None:
    """``task`` (a ``TaskConfig``): with ``HF_HUB_OFFLINE`` set, every ``--lm-eval-tasks`` name reads local
    files or a dataset in the cache, else one ``DataError`` naming the task, its hub dataset and the offline
    alternative."""
    if not task.lm_eval_tasks or not hub_offline():  # the option applies to --task lm-eval alone (validated)
        return
    from .llm.engine import TASKS_DIR, task_manager

    include = [TASKS_DIR] + ([Path(task.lm_eval_include)] if task.lm_eval_include else [])
    root = data_root(task.data_dir)
    names = [n.strip() for n in task.lm_eval_tasks if n.strip()]
    local = task_manager(include, root, False)
    missing = [n for n in names if n not in local.all_tasks]
    if not missing:
        return
    index = task_manager(include, root, True).task_index  # lm-eval's own tasks too (reused when they load)
    for name in missing:
        entry = index.get(name)
        path = ((getattr(entry, "cfg", None) or {}).get("dataset_path")) if entry is not None else None
        if path and on_the_hub_only(str(path)):
            shipped = f"{name}_offline" if f"{name}_offline" in local.all_tasks else None
            instead = (f"use {shipped} (the shipped offline copy; with --data-dir DIR)" if shipped else
                       "give a task YAML of your own that reads local files (--lm-eval-include DIR)")
            raise DataError(f"--lm-eval-tasks {name}: lm-eval's own task reads the hub dataset {path}, and the hub is "
                            f"off (HF_HUB_OFFLINE=1) with no copy in datasets' cache; {instead}")


def on_the_hub_only(path: str) -> bool:
    """A hub dataset id with no copy in datasets' or the hub's cache (a local folder or file builder: False)."""
    if path in FILE_BUILDERS or Path(path).expanduser().exists():
        return False
    import datasets.config
    import huggingface_hub.constants

    cached = [Path(datasets.config.HF_DATASETS_CACHE) / path.replace("/", "___"),
              Path(huggingface_hub.constants.HF_HUB_CACHE) / ("datasets--" + path.replace("/", "--"))]
    return not any(folder.is_dir() for folder in cached)
