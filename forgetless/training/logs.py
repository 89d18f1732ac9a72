"""Trainer logs out of the printed report: metric dicts go to a log file (JSON lines), never to
stdout, and progress bars go to stderr.

``transformers`` prints each log dict to stdout: ``PrinterCallback`` with ``print`` when progress
bars are off, ``ProgressCallback`` with ``tqdm.write`` (stdout) when they are on. ``route_logs``
swaps both for a ``LogFileCallback`` and a ``ProgressCallback`` whose ``on_log`` is silent and whose
bar is labelled with the run (``[forgetless] train-teacher``).

While a model trains, ``library_logs_to`` sends the records of transformers, datasets, accelerate
and huggingface_hub (warnings and up) to the same file as JSON lines instead of the terminal, and
turns off transformers' own bars (e.g. "Writing model shards" at every checkpoint).
"""
from __future__ import annotations

import contextlib
import json
import logging
from pathlib import Path

import transformers
from tqdm.auto import tqdm
from transformers.trainer_callback import PrinterCallback, ProgressCallback, TrainerCallback

LIBRARIES = ("transformers", "datasets", "accelerate", "huggingface_hub")


class LogFileCallback(TrainerCallback):
    """Append every log dict (with step and epoch) as one JSON line to ``path``."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        row = {"run": Path(args.output_dir).name, "step": state.global_step,
               **{k: v for k, v in logs.items() if k != "total_flos"}}
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, default=str) + "\n")


class QuietProgressCallback(ProgressCallback):
    """Progress bars (tqdm, on stderr) without the log dicts ``ProgressCallback`` writes to stdout."""

    def on_train_begin(self, args, state, control, **kwargs):  # the parent's, with a label from the start
        if state.is_world_process_zero:
            self.training_bar = tqdm(total=state.max_steps, dynamic_ncols=True,
                                     desc=f"[forgetless] {Path(args.output_dir).name}")
        self.current_step = 0

    def on_log(self, args, state, control, logs=None, **kwargs):
        return None


def route_logs(trainer, log_file: str | Path) -> None:
    """Send ``trainer``'s log dicts to ``log_file`` instead of stdout."""
    trainer.remove_callback(PrinterCallback)
    if any(isinstance(cb, ProgressCallback) for cb in trainer.callback_handler.callbacks):
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(QuietProgressCallback)
    trainer.add_callback(LogFileCallback(log_file))


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
