"""Options of Wanda (Sun, Liu, Bair & Kolter 2023): one-shot pruning by |W_ij| · ‖X_j‖₂, per output
row or N:M, no weight update. Standard library only: see ``method.py``."""
from __future__ import annotations

from dataclasses import dataclass

from ...registry import METHODS
from .._shared.oneshot_config import OneShotPruningConfig


@METHODS.register("wanda", implementation=".method:Wanda")
@dataclass
class WandaConfig(OneShotPruningConfig):
    """Wanda: weights and activations, no update; unstructured zeros (no dense speedup)."""
