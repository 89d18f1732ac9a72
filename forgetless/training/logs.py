"""Library logs out of the printed report: while a model trains, ``library_logs_to`` sends the records
of transformers, datasets, accelerate and huggingface_hub (warnings and up) to the run's log file as
JSON lines instead of the terminal, and turns off transformers' own bars (e.g. "Writing model shards"
at every checkpoint); ``progress_bars_off`` turns those bars off alone (a command that loads models).

Light on purpose: ``transformers`` is a lazy module and ``transformers.utils.logging`` imports
neither torch's trainer stack nor peft, so ``forgetless evaluate`` can use this module without
paying for the Trainer (``transformers.trainer_callback`` imports peft: ~10 s of CPU). The Trainer's
own callbacks (log dicts to the file, quiet labelled bars) are in ``log_callbacks.py``.
"""
from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

import transformers

LIBRARIES = ("transformers", "datasets", "accelerate", "huggingface_hub")


class JsonLinesHandler(logging.Handler):
    """Appends each log record as ``{"run", "library", "level", "message"}`` to ``path``."""

    def __init__(self, path: str | Path, run: str):
        super().__init__(logging.WARNING)
        self.path, self.run = Path(path), run

    def emit(self, record: logging.LogRecord) -> None:
        try:
            row = {"run": self.run, "library": record.name, "level": record.levelname,
                   "message": record.getMessage()}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, default=str) + "\n")
        except Exception:  # noqa: BLE001 - logging must never break training (logging's own rule)
            self.handleError(record)


@contextlib.contextmanager
def progress_bars_off():
    """transformers' own progress bars off within the block, as they were afterwards."""
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()


@contextlib.contextmanager
def library_logs_to(log_file: str | Path, run: str):
    """Within the block, library log records (WARNING and up) go to ``log_file``, not the terminal,
    and transformers' own progress bars are off; everything is restored afterwards."""
    handler = JsonLinesHandler(log_file, run)
    saved = []
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, list(logger.handlers), logger.propagate))
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)
        logger.propagate = False
    try:
        with progress_bars_off():
            yield
    finally:
        for logger, level, handlers, propagate in saved:
            logger.removeHandler(handler)
            for old in handlers:
                logger.addHandler(old)
            logger.setLevel(level)
            logger.propagate = propagate
