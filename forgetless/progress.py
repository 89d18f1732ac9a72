"""What a run says while it works, on stderr, so the printed report card on stdout stays clean: a
stage line per step (``stage``) and one progress-bar helper for every long step (tqdm). ``enabled``
is set once per run (``--no-progress`` turns the bars off); ``None`` lets tqdm decide (bars on a
terminal, none in logs and tests).

Besides the bars, a long step may print one estimate line once its first unit is timed
(``estimate``), as the fine-tune does (``training/timing.py``)::

    [forgetless] wanda: ~3.4 min for the 29 remaining decoder layers (measured 7.1 s for layer 1)

Lines are printed unless progress is off, bars or not (a log file gets them too). While one of the
two models of a run is evaluated (``scope("base")``), its bars and lines name it::

    [forgetless] compressed: lm-eval: 120 items of 6 task(s), 402 choices scored:  41%|████ …"""
from __future__ import annotations

import contextlib
import sys

from tqdm.auto import tqdm

enabled: bool | None = None
role: str | None = None  # the model a bar or line is about (``scope``), None: the run as a whole


@contextlib.contextmanager
def scope(name: str):
    """Bars and lines inside the block are prefixed ``name: `` (``base``, ``compressed``)."""
    global role
    outer, role = role, name
    try:
        yield
    finally:
        role = outer


def _label(text: str) -> str:
    return f"[forgetless] {role}: {text}" if role else f"[forgetless] {text}"


def bar(iterable=None, desc: str = "", total: int | float | None = None, **kwargs):
    """``tqdm(iterable)`` labelled ``[forgetless] desc`` (``[forgetless] base: desc`` in a ``scope``);
    shown unless progress is off."""
    return tqdm(iterable, desc=_label(desc), total=total, leave=False,
                disable=None if enabled is None else not enabled, **kwargs)


def stage(name: str) -> None:
    """A stage line of a run: ``[forgetless] name``."""
    print(f"[forgetless] {name}", file=sys.stderr, flush=True)


def duration(seconds: float) -> str:
    """``~N s`` under a minute, ``~N.N min`` under ten, ``~N min`` beyond."""
    if seconds < 60:
        return f"~{seconds:.0f} s"
    return f"~{seconds / 60:.1f} min" if seconds < 600 else f"~{seconds / 60:.0f} min"


def line(text: str) -> None:
    """``[forgetless] text`` on stderr (through tqdm, so open bars are not torn); none when progress is off."""
    if enabled is not False:
        tqdm.write(_label(text), file=sys.stderr)


def estimate(what: str, measured_s: float, unit: str, done: int, total: int, at_least_s: float = 10.0) -> None:
    """The estimate line for ``total − done`` remaining ``unit``s at the pace of the ``done`` timed ones
    (none when that is under ``at_least_s``: the step is over before it would help)."""
    left = total - done
    per_unit = measured_s / done if done > 0 else 0.0
    if left > 0 and per_unit * left >= at_least_s:
        measured = f"{measured_s:.1f} s for {unit} 1" if done == 1 else f"{per_unit:.1f} s per {unit}"
        line(f"{what}: {duration(per_unit * left)} for the {left} remaining {unit}s (measured {measured})")


class Steps:
    """A bar over ``units`` (e.g. decoder layers) that each take ``steps`` steps: it moves by a
    fraction of a unit per step, so the remaining-time estimate is there from the first step, and
    its postfix names the current unit and step (``[00:12<00:41, layer 3/30: statistics 5/16]``)."""

    FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"

    def __init__(self, desc: str, units: int, steps: int, unit: str):
        self.units, self.steps, self.unit, self.index = units, max(steps, 1), unit, 0
        self.bar = bar(desc=desc, total=units, bar_format=self.FORMAT)

    def step(self, phase: str) -> None:
        self.bar.set_postfix_str(f"{self.unit} {self.index + 1}/{self.units}: {phase}", refresh=False)
        self.bar.update(1 / self.steps)

    def unit_done(self) -> None:
        self.index += 1
        self.bar.n = self.index  # exact: the fractions of a unit need not add up to 1
        self.bar.refresh()

    def __enter__(self) -> Steps:
        return self

    def __exit__(self, *exc) -> None:
        self.bar.close()
