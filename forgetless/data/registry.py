"""The task registry and the data folder: the base every task module registers into (no task
module imports ``tasks.py``, so there is no import cycle). A named benchmark reads the data folder
(``--data-dir``, else ``$FORGETLESS_DATA_DIR``) when one is given, else the hub (``hub.py``)."""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataError
from ..registry import Registry

TASKS = Registry("task")
DATA_DIR_ENV = "FORGETLESS_DATA_DIR"


def data_root(data_dir: str | None) -> Path | None:
    """``--data-dir``, else ``$FORGETLESS_DATA_DIR`` (it must exist); None: read the hub."""
    value = data_dir or os.environ.get(DATA_DIR_ENV)
    if not value:
        return None
    path = Path(value).expanduser()
    where = f"--data-dir {value}" if data_dir else f"{DATA_DIR_ENV}={value}"
    if path.exists() and not path.is_dir():
        raise DataError(f"{where}: is a file; give the data folder (the one holding README.md and the sets)")
    if not path.is_dir():
        raise DataError(f"{where}: the data folder does not exist")
    return path


def resolve_data_dir(data_dir: str | None, task: str = "this task") -> Path:
    """The data folder of a task that has no hub source (it must be given)."""
    path = data_root(data_dir)
    if path is None:
        raise DataError(f"{task} reads a data folder only (no hub source): pass --data-dir DIR or set {DATA_DIR_ENV}")
    return path
