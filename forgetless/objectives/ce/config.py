"""Config of ``ce``: vanilla fine-tuning, cross-entropy with the gold labels (no options)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MODEL_KINDS, ObjectiveConfig
from ...registry import OBJECTIVES


@OBJECTIVES.register("ce", implementation=".objective:CrossEntropy")
@dataclass
class CEConfig(ObjectiveConfig):
    """Cross-entropy with the gold labels: class labels or target tokens, for every model kind."""

    model_kinds: ClassVar[tuple[str, ...]] = MODEL_KINDS
