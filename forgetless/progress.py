"""One progress-bar helper for every long step (tqdm, on stderr), so the printed report card on
stdout stays clean. ``enabled`` is set once per run (``--no-progress`` turns it off); ``None``
lets tqdm decide (bars on a terminal, none in logs and tests)."""
from __future__ import annotations

from tqdm.auto import tqdm

enabled: bool | None = None


def bar(iterable=None, desc: str = "", total: int | None = None, **kwargs):
    """``tqdm(iterable)`` labelled ``[forgetless] desc``; shown unless progress is off."""
    return tqdm(iterable, desc=f"[forgetless] {desc}", total=total, leave=False,
                disable=None if enabled is None else not enabled, **kwargs)

