"""What a run says while it works, on stderr, so the printed report card on stdout stays clean: a
stage line per step (``stage``) and one progress-bar helper for every long step (tqdm). ``enabled``
is set once per run (``--no-progress`` turns the bars off); ``None`` lets tqdm decide (bars on a
terminal, none in logs and tests).

Besides the bars, a long step may print one estimate line once its first unit is timed
(``estimate``), as the fine-tune does (``training/timing.py``)::

    [forgetless] wanda: ~3.4 min for the 29 remaining decoder layers (measured 7.1 s for layer 1)

Lines are printed unless progress is off, bars or not (a log file gets them too). While one of the
two models of a run is evaluated (``scope("base")``), its bars and lines name it::

    [forgetless] compressed: lm-eval: 120 items of 6 task(s), 402 choices scored:  41%|████ …

Where tqdm draws no bar because stderr is not a terminal (a log file, a notebook's captured stream,
``python script.py 2> log``) and progress is not off, a long step still says how far it got: a line at
most once a minute (``Lines``), e.g. during the 40 WikiText-2 windows of a perplexity::

    [forgetless] base: perplexity (40 windows of 2048 tokens): 12/40 windows (~1.2 min elapsed, ~2.8 min left)"""
from __future__ import annotations

import contextlib
import sys
import time

from tqdm.auto import tqdm

enabled: bool | None = None
role: str | None = None  # the model a bar or line is about (``scope``), None: the run as a whole
LINE_EVERY_S = 60.0  # a bar that is not drawn prints its progress line at most this often


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
    shown unless progress is off. Where tqdm would draw nothing (stderr is not a terminal) and progress
    is not off, progress lines instead (``Lines``)."""
    shown = tqdm(iterable, desc=_label(desc), total=total, leave=False,
                 disable=None if enabled is None else not enabled, **kwargs)
    if shown.disable and enabled is None:
        shown.close()
        return Lines(iterable, desc, total, kwargs.get("unit", "it"))
    return shown


class Lines:
    """A bar as lines, for a stderr that is not a terminal: ``[forgetless] desc: n/total units (~elapsed
    elapsed, ~left left)`` at most every ``LINE_EVERY_S`` seconds, and once more at the end of a step that
    printed one. The part of tqdm's interface forgetless uses: iteration, ``update``, ``n``,
    ``set_postfix_str``, ``refresh``, ``close``, a context manager."""

    def __init__(self, iterable, desc: str, total: int | float | None, unit: str = "it"):
        self.iterable, self.desc, self.unit, self.n, self.postfix, self.printed = iterable, desc, unit, 0, "", False
        self.total = total if total is not None or not hasattr(iterable, "__len__") else len(iterable)
        self.started = self.last = time.monotonic()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)

    def update(self, n: int | float = 1) -> None:
        self.n += n
        self.refresh()

    def set_postfix_str(self, text: str = "", refresh: bool = True) -> None:
        self.postfix = text

    def refresh(self, final: bool = False) -> None:
        now = time.monotonic()
        if now - self.last >= LINE_EVERY_S or (final and self.printed):
            self.last, self.printed = now, True
            line(self.text(now - self.started))

    def text(self, elapsed: float) -> str:
        """``desc: 12/40 windows (~1.2 min elapsed, ~2.8 min left), postfix``."""
        units = "" if self.unit == "it" else f" {self.unit}s"  # tqdm's default unit: a bare count
        count = f"{int(self.n)}/{self.total:g}{units}" if self.total else f"{int(self.n)}{units}"
        left = f", {duration(elapsed / self.n * (self.total - self.n))} left" if self.total and self.n else ""
        return f"{self.desc}: {count} ({duration(elapsed)} elapsed{left})" + (f", {self.postfix}" if self.postfix else "")

    def close(self) -> None:
        self.refresh(final=True)
        self.printed = False  # once

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
        self.bar = bar(desc=desc, total=units, bar_format=self.FORMAT, unit=unit)

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
