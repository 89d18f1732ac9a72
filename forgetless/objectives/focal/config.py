"""Configs of ``focal`` and ``focal-reweighted`` (Du et al. appendix B): the focusing exponent γ."""
from __future__ import annotations

from dataclasses import dataclass

from ...config import ObjectiveConfig
from ...options import option
from ...registry import OBJECTIVES


@OBJECTIVES.register("focal", implementation=".objective:Focal")
@dataclass
class FocalConfig(ObjectiveConfig):
    gamma: float = option(2.0, help="focusing exponent γ (paper: 2)", low=0)


@OBJECTIVES.register("focal-reweighted", implementation=".objective:FocalReweighted")
@dataclass
class FocalReweightedConfig(FocalConfig):
    """The focal loss's value with the weights detached (sample re-weighted cross-entropy)."""
