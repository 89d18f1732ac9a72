"""The task registry and the data folder: the base every task module registers into (no task
module imports ``tasks.py``, so there is no import cycle)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..errors import DataError
from ..registry import Registry
from .task import Task

TASKS: Registry[Callable[..., Task]] = Registry("task")
DATA_DIR_ENV = "FORGETLESS_DATA_DIR"


def resolve_data_dir(data_dir: str | None) -> Path:
    """``--data-dir``, else ``$FORGETLESS_DATA_DIR``; it must exist."""
    value = data_dir or os.environ.get(DATA_DIR_ENV)
    if not value:
        raise DataError(f"this task reads real data: pass --data-dir (e.g. ../shared/data) or set {DATA_DIR_ENV}")
    path = Path(value).expanduser()
    if not path.is_dir():
        raise DataError(f"data folder {path} does not exist")
    return path
