"""Options of round-to-nearest (RTN) quantization: every linear layer of the transformer stacks (or
those ``targets`` / ``ignore`` choose, as for the other one-shot methods) rounded to a per-group
``bits``-bit integer grid or to float8_e4m3fn, optionally with its inputs quantized per token (W8A8), no
calibration (the baseline of Frantar et al. 2022, "GPTQ", Table 1-3; llm-compressor's
``QuantizationModifier``, e.g. its W4A16 and FP8_DYNAMIC presets). The options are ``quantization/options.py``'s
``WeightFormat``, shared with ``gptq`` and ``awq``. Standard library only: see ``method.py``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...quantization.options import WeightFormat
from ...registry import METHODS
from .._shared.oneshot_config import TargetsConfig


class ReadsTextToRank:
    """RTN's ``calibration``: ``none``, but ``text`` with ``--sensitivity`` or ``--bits-budget`` (the KL is measured
    on calibration texts: ``_shared/sensitivity.py``, ``_shared/budget.py``); on the class, as ``forgetless
    list`` shows it."""

    def __get__(self, config, owner) -> str:
        if config is None:
            return "none (text with --sensitivity or --bits-budget)"
        return "none" if config.sensitivity == "none" and not config.bits_budget else "text"


@METHODS.register("rtn", implementation=".method:Rtn")
@dataclass
class RtnConfig(TargetsConfig, WeightFormat):
    """RTN: each weight rounded to its group's min-max grid (or to fp8); stored as compressed-tensors,
    dequantized to float32 in memory (smaller file, no speedup on CPU)."""

    structured: ClassVar[bool] = False
    quantizes: ClassVar[bool] = True
    task_types: ClassVar[tuple[str, ...]] = ("classification",)
    model_kinds: ClassVar[tuple[str, ...]] = ("classifier", "causal-lm")
    smoke: ClassVar[dict] = {"group_size": 16}
    # post-training: a fine-tune would move the weights off the grid (fine-tune first, then rtn)
    recovers: ClassVar[bool] = False
    calibration = ReadsTextToRank()

    def check(self) -> None:
        super().check()
        self.check_format(calibrates=False)

    def check_model(self, dims: dict, where: str) -> None:
        self.check_widths(dims, where)
