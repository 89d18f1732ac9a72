"""Vanilla fine-tuning: cross-entropy with the gold labels (class or target tokens), the loss of the
objective contract's base class (``training/objective.py``)."""
from __future__ import annotations

from ...training.objective import Objective
from .config import CEConfig


class CrossEntropy(Objective):
    def __init__(self, config: CEConfig | None = None):
        super().__init__(config or CEConfig())
