"""The peak memory of one step of a run (the compression step: ``pipeline.compress_student``) and of
the whole run so far (``run_peak``: what the card reports beside it), measured inside the process.

Linux keeps a process's resident-set high-water mark (``VmHWM`` in ``/proc/self/status``). Writing
``5`` to ``/proc/self/clear_refs`` resets it to the current resident set (Linux ≥ 4.0, proc(5)),
so ``VmHWM`` read at the end of the step is the step's own peak, and ``peak − resident at the
start`` what the step added. (``getrusage(...).ru_maxrss`` cannot do this: it never goes down, and
a child process starts with its parent's.) Where the mark cannot be reset the process's ``VmHWM``
is reported, flagged ``since_start_of_step: false`` (an upper bound of the step's peak); without
``/proc`` (not Linux) nothing is measured. A reset loses the process's earlier peak, so ``reset_peak``
keeps the highest mark it cleared: the whole run's peak is the larger of that and ``VmHWM`` now. On a GPU the step's peak of allocated CUDA memory joins
(``torch.cuda.max_memory_allocated`` after ``reset_peak_memory_stats``).
"""
from __future__ import annotations

import contextlib
from pathlib import Path

STATUS = Path("/proc/self/status")
CLEAR_REFS = Path("/proc/self/clear_refs")
MIB = 2 ** 20
_cleared = 0  # the highest VmHWM a reset cleared (bytes)


def status_bytes(field: str) -> int | None:
    """``VmRSS`` / ``VmHWM`` / … of this process in bytes (None where ``/proc`` has none)."""
    try:
        for line in STATUS.read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        return None
    return None


def reset_peak() -> bool:
    """Reset this process's ``VmHWM`` to its current resident set (keeping the mark it clears for
    ``run_peak``); whether it could."""
    global _cleared
    _cleared = max(_cleared, status_bytes("VmHWM") or 0)
    try:
        CLEAR_REFS.write_text("5")
    except OSError:
        return False
    return True


def run_peak() -> dict | None:
    """``{peak_rss_mib}``: this process's peak resident set since it started, across resets (None
    without ``/proc``)."""
    now = status_bytes("VmHWM")
    return None if now is None else {"peak_rss_mib": round(max(now, _cleared) / MIB, 1)}


class PeakMemory(contextlib.AbstractContextManager):
    """``with PeakMemory() as peak: step()`` then ``peak.result``: ``{peak_rss_mib, start_rss_mib,
    added_mib, since_start_of_step, [cuda_peak_mib]}`` (None without ``/proc``)."""

    def __enter__(self):
        self.reset = reset_peak()
        self.start = status_bytes("VmRSS")
        self.result: dict | None = None
        self.cuda = _cuda()
        if self.cuda is not None:
            self.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc) -> None:
        peak = status_bytes("VmHWM")
        if peak is None or self.start is None:
            return
        self.result = {"peak_rss_mib": round(peak / MIB, 1), "start_rss_mib": round(self.start / MIB, 1),
                       "added_mib": round((peak - self.start) / MIB, 1), "since_start_of_step": self.reset}
        if self.cuda is not None:
            self.result["cuda_peak_mib"] = round(self.cuda.max_memory_allocated() / MIB, 1)


def _cuda():
    import torch

    return torch.cuda if torch.cuda.is_available() else None
