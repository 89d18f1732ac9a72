"""What a run says while it works, on stderr, so the printed report card on stdout stays clean: a
stage line per step (``stage``) and one progress-bar helper for every long step (tqdm). ``enabled``
is set once per run (``--no-progress`` turns the bars off); ``None`` lets tqdm decide (bars on a
terminal, none in logs and tests)."""
from __future__ import annotations

import sys

from tqdm.auto import tqdm

enabled: bool | None = None


def bar(iterable=None, desc: str = "", total: int | None = None, **kwargs):
    """``tqdm(iterable)`` labelled ``[forgetless] desc``; shown unless progress is off."""
    return tqdm(iterable, desc=f"[forgetless] {desc}", total=total, leave=False,
                disable=None if enabled is None else not enabled, **kwargs)


def stage(name: str) -> None:
    """A stage line of a run: ``[forgetless] name``."""
    print(f"[forgetless] {name}", file=sys.stderr, flush=True)
