"""Options of SparseGPT (Frantar & Alistarh 2023): one-shot pruning with OBS reconstruction from the
damped inverse Hessian of the calibration inputs. Standard library only: see ``method.py``."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import OptionError
from ...options import option
from ...registry import METHODS
from .._shared.oneshot_config import OneShotPruningConfig


@METHODS.register("sparsegpt", implementation=".method:SparseGpt")
@dataclass
class SparseGptConfig(OneShotPruningConfig):
    """SparseGPT: pruned weights' error compensated on the kept ones; unstructured zeros (no dense
    speedup)."""

    block_size: int = option(128, low=1, help="columns per lazy-update block; the unstructured mask is chosen "
                                              "per block (§3.3); a multiple of M for N:M")
    damp: float = option(0.01, low=0, low_open=True, high=1, help=(
        "relative dampening: λ = damp · mean(diag H) added to the Hessian's diagonal (the authors' 0.01)"))

    def check(self) -> None:
        super().check()
        nm = self.nm
        if nm and self.block_size % nm[1]:
            raise OptionError(f"--block-size {self.block_size}: must be a multiple of M = {nm[1]} for --pattern "
                              f"{self.pattern}")
