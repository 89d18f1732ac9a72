"""Options shared by the one-shot, calibration-based methods: the calibration set (all of them), and
for pruning (Wanda, Sun et al. 2023; SparseGPT, Frantar & Alistarh 2023) the target sparsity and
the unstructured or N:M pattern (Mishra et al. 2021); GPTQ adds its own (``gptq/config.py``).
Standard library only (read by the registry without torch)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from ...config import MethodConfig
from ...errors import OptionError
from ...options import option
from ...ranges import MAX_TOKENS

PATTERNS = ("unstructured", "2:4", "4:8")


@dataclass
class TargetsConfig(MethodConfig):
    """Which linear layers a one-shot method compresses (``models/targets.py``), spelled as llm-compressor
    and compressed-tensors spell them."""

    targets: list[str] = option(factory=lambda: ["Linear"], help=(
        "linear layers to compress, inside the decoder blocks: class names (Linear: every nn.Linear, Conv1D too), "
        "module names, or re:REGEX matched from the start of the module name (mixture-of-experts: "
        "mlp.experts.N.gate_up_proj / down_proj per expert); comma-separated"))
    ignore: list[str] = option(factory=list, help=(
        "linear layers to leave alone, spelled as --targets (e.g. re:.*mlp\\.gate$); the head and the "
        "embeddings are never compressed; a pattern matching nothing is an error"))

    def check(self) -> None:
        super().check()
        for flag, patterns in (("--targets", self.targets), ("--ignore", self.ignore)):
            for pattern in patterns:
                if not pattern.strip():
                    raise OptionError(f"{flag} {pattern!r}: expected a class name, a module name or re:REGEX")
                if pattern.startswith("re:"):
                    try:
                        re.compile(pattern[3:])
                    except re.error as exc:
                        raise OptionError(f"{flag} {pattern}: not a regular expression ({exc})") from None
        if not self.targets:
            raise OptionError("--targets: give at least one pattern (default: Linear)")

    @property
    def every_linear(self) -> bool:
        """The default selection (every linear of the blocks): the config's widths are theirs
        (``check_model``); any other is checked on the modules (``check_fits``)."""
        return list(self.targets) == ["Linear"] and not self.ignore


@dataclass
class OneShotConfig(TargetsConfig):
    """Calibration of a one-shot method (pruning or GPTQ): nothing is removed (no dense speedup)."""

    structured: ClassVar[bool] = False
    task_types: ClassVar[tuple[str, ...]] = ("classification",)
    model_kinds: ClassVar[tuple[str, ...]] = ("classifier", "causal-lm")
    calibration: ClassVar[str] = "text"

    calibration_examples: int = option(128, low=1, help=(
        "calibration texts: a seeded, label-stratified subset of the task's training split, fed as the model "
        "kind feeds them (prompts for causal-lm), or a seeded sample of --calibration-data"))
    calibration_length: int = option(128, low=8, high=MAX_TOKENS, help="max tokens per calibration text")
    calibration_batch: int = option(8, low=1, help="calibration texts per forward pass")


@dataclass
class OneShotPruningConfig(OneShotConfig):
    """Unstructured or N:M: weights are zeroed, never removed (no dense speedup)."""

    smoke: ClassVar[dict] = {"sparsity": 0.5, "calibration_examples": 8, "calibration_batch": 4}

    sparsity: float = option(0.5, low=0, high=1, help=(
        "pattern unstructured: share of zero weights in every output row of every prunable linear layer "
        "(below 1); N:M patterns fix it at 1 − N/M"))
    pattern: str = option("unstructured", choices=PATTERNS, help=(
        "unstructured (per output row) | 2:4 | 4:8: keep N of every M consecutive input weights of each row "
        "(semi-structured, sparse tensor cores)"))
    recovery: str = option("none", choices=("fine-tune", "none"), help=(
        "none: one-shot, nothing is trained (the papers' setting); fine-tune: train afterwards with the "
        "zeros held fixed"))

    def check(self) -> None:
        super().check()
        if self.sparsity >= 1.0:
            raise OptionError(f"--sparsity {self.sparsity}: must be below 1 (some weights must stay)")

    def check_model(self, dims: dict, where: str) -> None:
        """N:M needs every linear layer's input width (``dims["widths"]``, from the model's config) to be a
        multiple of M; checked before any work (``OneShotPruning.check_fits`` checks the modules)."""
        for width in (dims.get("widths") or ()) if self.every_linear else ():
            self.check_nm_fits(width, f"{where} has linear layers with")

    def check_nm_fits(self, width: int, where: str) -> None:
        """An N:M pattern needs ``width`` inputs to be a multiple of M (one line naming the flag)."""
        if self.nm and width % self.nm[1]:
            raise OptionError(f"--pattern {self.pattern}: {where} {width} inputs, not a multiple of {self.nm[1]}; "
                              "use --pattern unstructured")

    @property
    def nm(self) -> tuple[int, int] | None:
        """``(n, m)`` for an N:M pattern, None when unstructured."""
        if self.pattern == "unstructured":
            return None
        n, m = self.pattern.split(":")
        return int(n), int(m)

    @property
    def target_sparsity(self) -> float:
        nm = self.nm
        return self.sparsity if nm is None else 1 - nm[0] / nm[1]
