"""Evaluation settings shared by every model kind (``kinds/``) and the pipeline."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from .runtime import check_runtime


@dataclass
class EvalConfig:
    """Evaluation settings: batch size, and for generating models the decoding length / beams."""

    batch_size: int = 64
    max_new_tokens: int = 32
    num_beams: int = 1
    meteor: bool = True  # METEOR on generation tasks (needs nltk; WordNet when available offline)
    perplexity_file: str | None = None  # causal-lm: held-out perplexity on this text file (one text per line)
    runtime: str = "torch"  # compressed model evaluated and timed under: torch | torch-bf16 | onnxruntime

    def __post_init__(self) -> None:
        check_runtime(self.runtime)
        if self.batch_size < 1 or self.max_new_tokens < 1 or self.num_beams < 1:
            raise ConfigError("evaluation batch_size, max_new_tokens and num_beams must be >= 1")
