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
    perplexity_file: str | None = None  # causal-lm: held-out perplexity on this text file (one text per line, or .jsonl)
    perplexity_texts: int = 40  # causal-lm: the first N texts of perplexity_file
    runtime: str = "torch"  # compressed model evaluated and timed under: torch | torch-bf16 | onnxruntime
    # causal-lm zero-shot scoring (evaluate/zero_shot.py)
    prompt_template: str = "auto"  # auto (the chat template when the tokenizer has one) | chat | plain
    shots: int = 0  # k-shot: training examples put before each evaluated one (seeded by shot_seed)
    label_score: str = "sum"  # sum | mean (length-normalised) of the label word's token log-probabilities
    score_calibration: str = "content-free"  # none | content-free | set-mean (Zhao et al. 2021)
    shot_seed: int = 0

    def __post_init__(self) -> None:
        check_runtime(self.runtime)
        from .zero_shot import check_options
        if self.perplexity_texts < 1:
            raise ConfigError(f"--perplexity-texts: {self.perplexity_texts} is out of range; valid: >= 1")
        check_options(self.prompt_template, self.shots, self.label_score, self.score_calibration)
        if self.batch_size < 1 or self.max_new_tokens < 1 or self.num_beams < 1:
            raise ConfigError("evaluation batch_size, max_new_tokens and num_beams must be >= 1")
