"""Trainer logs out of the printed report: metric dicts go to a log file (JSON lines), never to
stdout, and progress bars go to stderr.

``transformers`` prints each log dict to stdout: ``PrinterCallback`` with ``print`` when progress
bars are off, ``ProgressCallback`` with ``tqdm.write`` (stdout) when they are on. ``route_logs``
swaps both for a ``LogFileCallback`` and a ``ProgressCallback`` whose ``on_log`` is silent and whose
bar is labelled with the run (``[forgetless] train-teacher``).

Imported only where a model trains: ``transformers.trainer_callback`` imports peft (seconds of CPU).
"""
from __future__ import annotations

import json
from pathlib import Path

from tqdm.auto import tqdm
from transformers.trainer_callback import PrinterCallback, ProgressCallback, TrainerCallback


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
