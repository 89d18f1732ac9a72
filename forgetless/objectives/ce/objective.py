"""Vanilla fine-tuning: cross-entropy with the gold labels (class or target tokens), the loss of the
objective contract's base class (``training/objective.py``)."""
from __future__ import annotations

from ...training.objective import Objective


class CrossEntropy(Objective):
    """The base class's loss, under its registered name ``ce``."""
