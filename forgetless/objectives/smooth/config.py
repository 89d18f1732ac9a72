"""Config of ``smooth``: Distil from globally smoothed teacher probabilities (Du et al. §5.2, eq. 3
with one exponent ``d`` for every sample)."""
from __future__ import annotations

from dataclasses import dataclass

from ...options import option
from ...registry import OBJECTIVES
from ..distil.config import DistilConfig


@OBJECTIVES.register("smooth", implementation=".objective:Smooth")
@dataclass
class SmoothConfig(DistilConfig):
    degree: float = option(0.9, help="the global smoothing exponent d (paper: 0.9); 1 = plain Distil", low=0)
