"""Options shared by the head-pruning methods (``heads``: Michel et al. 2019; ``rahp``). Standard
library only: imported by their ``config.py``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig, recovery_option
from ...options import option


@dataclass
class HeadPruningConfig(MethodConfig):
    """Base of the head-pruning configs: scores use a classification head's logits."""

    model_kinds: ClassVar[tuple[str, ...]] = ("classifier",)
    calibration: ClassVar[str] = "task"  # gradients of the task's loss
    smoke: ClassVar[dict] = {"ratio": 0.25, "scoring_examples": 8}

    ratio: float = option(0.2, help="share of all attention heads pruned", low=0, high=1, high_open=True)
    scoring_examples: int = option(256, help="size of the seeded scoring subset of the training set", low=1)
    scoring_batch: int = option(32, help="scoring examples per forward / backward pass", low=1)
    scoring_length: int = option(64, help="max tokens per scoring example", low=8)
    recovery: str = recovery_option("fine-tune | none (post-training: score and remove only)")
