"""Wall-clock manners of the trainer (issue 20): checkpoints every N minutes and at every epoch end,
and an overall time estimate from a short measured warm-up.

``TimedCheckpoints`` asks the ``Trainer`` for a checkpoint (``control.should_save``) when
``--checkpoint-minutes`` of training have passed since the last one, and at the end of every epoch,
so an interrupted run never loses more than that much work whatever ``--save-steps`` is. The
checkpoint is the Trainer's own (weights, optimizer, scheduler, RNG, trainer state), so resuming
from a time-triggered one is as exact as from a step-triggered one. Cadence is not part of a run's
identity (``TrainConfig.NOT_IN_IDENTITY``). Under several processes the main process's clock decides, so
all of them save at the same step.

``StepTimeEstimate`` times the optimisation steps after the first one (which pays for warm-up:
allocation, first batches) and prints one line to stderr::

    [forgetless] fine-tune: ~N min for S steps (measured X s/step over the first k steps)
"""
from __future__ import annotations

import sys
import time

import torch
from tqdm.auto import tqdm
from transformers import TrainerCallback

MEASURED_STEPS = 5  # steps timed for the estimate, after one warm-up step


def now() -> float:
    """The clock both callbacks read (seconds; tests replace it)."""
    return time.monotonic()


class TimedCheckpoints(TrainerCallback):
    """A checkpoint every ``minutes`` of training (0: none by time) and at every epoch end."""

    def __init__(self, minutes: float):
        self.seconds = minutes * 60.0
        self.last_save = now()
        self.saved_step = -1

    def on_train_begin(self, args, state, control, **kwargs):
        self.last_save = now()
        self.saved_step = state.global_step  # a resumed run starts at its checkpoint

    def on_step_end(self, args, state, control, **kwargs):
        if self.seconds > 0 and _same_on_every_process(now() - self.last_save >= self.seconds, args.device):
            control.should_save = True
        return control

    def on_epoch_end(self, args, state, control, **kwargs):
        if state.global_step > self.saved_step:  # the epoch's last step may have just been saved
            control.should_save = True
        return control

    def on_save(self, args, state, control, **kwargs):
        self.last_save = now()
        self.saved_step = state.global_step


def _same_on_every_process(flag: bool, device) -> bool:
    """``flag`` as the main process sees it: every process must take a checkpoint at the same step
    (saving is collective under FSDP / DeepSpeed), and each reads its own clock."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return flag
    decision = torch.tensor([int(flag)], device=device)
    torch.distributed.broadcast(decision, src=0)
    return bool(decision.item())


def estimate_line(seconds_per_step: float, steps: int, measured: int, total: int | None = None) -> str:
    """``[forgetless] fine-tune: ~N min for S steps (measured X s/step over the first k steps)``, ``~N s``
    under a minute; ``total``: the run's step count when it resumed part-way (S are the steps left)."""
    seconds = seconds_per_step * steps
    shown = f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.1f} min" if seconds < 600 else \
        f"{seconds / 60:.0f} min"
    what = f"{steps} steps" if total is None or total == steps else f"the remaining {steps} of {total} steps"
    return (f"[forgetless] fine-tune: ~{shown} for {what} (measured {seconds_per_step:.3g} s/step over the "
            f"first {measured} steps)")


class StepTimeEstimate(TrainerCallback):
    """Prints the overall estimate once ``MEASURED_STEPS`` steps after the first have been timed (not
    for runs shorter than that: they are over before an estimate would help)."""

    def __init__(self, measured: int = MEASURED_STEPS):
        self.measured = measured
        self.first_step = self.started = None

    def on_train_begin(self, args, state, control, **kwargs):
        self.first_step, self.started = state.global_step, None

    def on_step_end(self, args, state, control, **kwargs):
        done = state.global_step - self.first_step
        if done == 1:
            self.started = now()
        elif self.started is not None and done == 1 + self.measured:
            per_step = (now() - self.started) / self.measured
            remaining = state.max_steps - self.first_step
            if state.is_world_process_zero and remaining > 1 + self.measured:
                tqdm.write(estimate_line(per_step, remaining, self.measured, state.max_steps), file=sys.stderr)
            self.started = None
