"""Divergence along the base's own answers (pure tensor / numpy maths; no model code).

The base answers each prompt greedily once (``llm/answers.py``); each compressed model is then run
*teacher-forced* on prompt + the base's answer, in one forward. At answer position t the base's
next-token distribution p and the compressed model's q give:

* **KL(p ‖ q)** in nats, per answer token: where the compressed model's distribution moved;
  Kirichenko et al. 2026 find the divergence of quantized LLMs concentrated at the tokens where the
  base itself is uncertain, so the KL is also split by the base's **token entropy** H(p), in thirds
  whose cut points are the 1/3 and 2/3 quantiles of H(p) over all answer tokens of the set;
* **top-1 agreement**: the compressed model's argmax is the base's token (its greedy answer's);
* per prompt, exactly, where the compressed model's own greedy answer would part from the base's
  (Dutta et al. 2024: compressed models keep accuracy while their answers *flip*): greedy decoding
  feeds a model its own tokens, so as long as its argmax equals the base's token it is fed the same
  prefix; the **first divergence** is the first answer position where its argmax differs from the
  base's token (None: never, the **identical answer**, its end-of-sequence token included), and the
  answer is **identical for the first N tokens** when it parts at N or later (or never).

Means over tokens carry a bootstrap interval that resamples *prompts* (the tokens of one answer are
not independent): the ratio of summed values to summed tokens in each resample.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, mean_interval, percentile_interval, resampled_means

THIRDS = ("low", "middle", "high")  # the base's token entropy, lowest third first


@dataclass
class AnswerScores:
    """One prompt's answer tokens scored: ``kl``, ``entropy`` (the base's, nats) and ``agree`` (the
    compressed model's argmax is the base's token) per answer token."""

    kl: np.ndarray
    entropy: np.ndarray
    agree: np.ndarray

    @property
    def first_divergence(self) -> int | None:
        """The first answer position where the compressed model's greedy answer parts from the base's; None: never."""
        parted = np.flatnonzero(~self.agree)
        return int(parted[0]) if parted.size else None


def score_answer(base_logits: torch.Tensor, compressed_logits: torch.Tensor, answer: torch.Tensor) -> AnswerScores:
    """``base_logits`` and ``compressed_logits`` ``(T, V)``: each model's logits at the positions that
    predict the ``T`` tokens of ``answer`` (the base's); KL(base ‖ compressed), the base's entropy and the
    agreement per token, in float64 from float32 log-softmaxes."""
    if base_logits.shape != compressed_logits.shape or base_logits.shape[0] != answer.shape[0]:
        raise ValueError(f"logits {tuple(base_logits.shape)} and {tuple(compressed_logits.shape)} do not fit an "
                         f"answer of {answer.shape[0]} tokens")
    log_p = torch.log_softmax(base_logits.float(), dim=-1)
    log_q = torch.log_softmax(compressed_logits.float(), dim=-1)
    p = log_p.exp()
    kl = (p * (log_p - log_q)).sum(-1)
    entropy = -(p * log_p).sum(-1)
    agree = compressed_logits.argmax(-1) == answer
    return AnswerScores(kl.double().clamp_min(0).numpy(), entropy.double().numpy(), agree.numpy())


def entropy_thirds(entropies: np.ndarray) -> tuple[float, float]:
    """The cut points of the low / middle / high thirds: the 1/3 and 2/3 quantiles of the base's entropies."""
    low, high = np.quantile(entropies, [1 / 3, 2 / 3])
    return float(low), float(high)


def third_of(entropy: np.ndarray, cuts: tuple[float, float]) -> np.ndarray:
    """0, 1, 2 (low, middle, high) per token: at or below the first cut, at or below the second, above."""
    return np.searchsorted(np.asarray(cuts), entropy, side="left")


def token_mean(values: list[np.ndarray], n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
               confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """``{value, low, high, n, tokens}``: the mean over all tokens of ``values`` (one array per prompt),
    with the bootstrap interval resampling prompts (a ratio of sums per resample); None for no token."""
    kept = [np.asarray(v, dtype=float) for v in values]
    sums = np.array([v.sum() for v in kept])
    counts = np.array([v.size for v in kept], dtype=float)
    if counts.sum() == 0:
        return {"value": None, "low": None, "high": None, "n": len(kept), "tokens": 0}
    means = resampled_means(np.stack([sums, counts], axis=1), n_resamples, np.random.default_rng(seed))
    ratios = means[:, 0] / np.where(means[:, 1] > 0, means[:, 1], np.nan)
    low, high = percentile_interval(ratios[np.isfinite(ratios)], confidence)
    return {"value": float(sums.sum() / counts.sum()), "low": low, "high": high, "n": len(kept),
            "tokens": int(counts.sum())}


def prefix_lengths(max_new_tokens: int) -> list[int]:
    """The N of "identical for the first N tokens": 1, 4, 16, 64 … up to ``max_new_tokens`` (and it)."""
    lengths = [n for n in (1, 4, 16, 64, 256, 1024, 4096) if n < max_new_tokens]
    return lengths + [max_new_tokens]


def summarize(scored: list[AnswerScores], max_new_tokens: int, n_resamples: int = DEFAULT_RESAMPLES,
              seed: int = 0) -> dict:
    """The set's numbers: mean KL and top-1 agreement per answer token (intervals over prompts), the share
    of identical answers, the first divergences (median over the prompts that part), the counts identical
    for the first N tokens, and KL / agreement in the thirds of the base's token entropy."""
    if not scored:
        raise ValueError("no answers to summarize")
    first = [s.first_divergence for s in scored]
    parted = [d for d in first if d is not None]
    cuts = entropy_thirds(np.concatenate([s.entropy for s in scored]))
    thirds = {}
    for number, name in enumerate(THIRDS):
        masks = [third_of(s.entropy, cuts) == number for s in scored]
        thirds[name] = {"kl": token_mean([s.kl[m] for s, m in zip(scored, masks)], n_resamples, seed),
                        "top1_agreement": token_mean([s.agree[m] for s, m in zip(scored, masks)], n_resamples, seed)}
    thirds["cuts_nats"] = list(cuts)
    return {"prompts": len(scored), "answer_tokens": int(sum(s.kl.size for s in scored)),
            "kl": token_mean([s.kl for s in scored], n_resamples, seed),
            "top1_agreement": token_mean([s.agree for s in scored], n_resamples, seed),
            "identical": mean_interval(np.array([d is None for d in first]), n_resamples, seed),
            "first_divergence": {"median": float(np.median(parted)) if parted else None, "parted": len(parted),
                                 "positions": first},
            "identical_first": {str(n): sum(d is None or d >= n for d in first) for n in prefix_lengths(max_new_tokens)},
            "entropy_thirds": thirds}
