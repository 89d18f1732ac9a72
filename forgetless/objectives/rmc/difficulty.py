"""Variance-based sample difficulty (Du et al., "What do Compressed Large Language Models Forget?
Robustness Challenges in Model Compression", §4.1 and §5.1).

Models pruned from the fine-tuned teacher at several sparsities disagree most on the samples that
need more than a shortcut. For every training sample ``i`` we take its cross-entropy loss under
each pruned model and the variance ``v_i`` of those losses; low variance = easy, high = hard.
Eq. 2 turns variances into difficulty degrees for RMC's smoothing (eq. 3):

    d_i = α + (1 − α) · (v_i − V_min) / (V_max − V_min)

so the easiest sample is smoothed most (``d = α``) and the hardest not at all (``d = 1``).
**Degenerate case** ``V_max = V_min`` (every sample equally variable, e.g. one pruned model):
nothing tells samples apart, so every ``d_i = 1`` (teacher unchanged; RMC reduces to Distil).

Schedules of the pruned models:

- ``independent`` — the paper's (§5.1): five independent runs, each starting from the
  *pre-trained* model and fine-tuned on the task with iterative magnitude pruning (the cubic
  schedule of Zhu & Gupta 2017 with the magnitude method's defaults, ``methods/_shared/magnitude.py``)
  to its sparsity, with the run's training settings.
  Five full fine-tunings: the most faithful and the most expensive.
- ``chain`` (default, fast) — one copy of the fine-tuned teacher walks up the sparsity levels: at
  each level global magnitude pruning of the encoder linears (``adapter.prunable_linears``, the
  ``MagnitudePruner`` of ``methods/_shared/magnitude.py``) to the target, then a short masked recovery fine-tune
  (``recovery_epochs``), i.e. IMP with one short step per level.
- ``oneshot`` — each level pruned from the teacher, then the same short recovery.

Where the task's sets carry ground-truth hardness, the agreement of the variance split with it is
reported on the training split and, from the same pruned models, on the held-out dev set (the
paper's 82.8% agreement is measured on dev). Per-sample losses and variances are cached on disk
(NumPy npz, no pickle), keyed by the training (and dev) set, the teacher's weights and this
configuration.
"""
from __future__ import annotations

import copy
import logging
import shutil
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
import transformers
from scipy.stats import rankdata

from ...errors import ConfigError, DataError
from ...metrics.predict import predict_logits
from ...fsutil import atomic_write_json
from ...kinds import kind_for
from ...methods._shared.magnitude import CubicSchedule, MagnitudeCallback, MagnitudePruner
from ...methods._shared.oneshot import HoldZeros
from ...training.trainer import fine_tune
from ...models.io import model_fingerprint
from ..cache import atomic_save_npz, cache_key, context_cache_dir, load_npz
from .config import DifficultyConfig

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- pure functions (tensors / arrays)

def per_sample_losses(logits: np.ndarray, labels) -> np.ndarray:
    """Cross-entropy of the gold label for each row of ``logits``."""
    logits = torch.as_tensor(np.asarray(logits), dtype=torch.float64)
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    return torch.nn.functional.cross_entropy(logits, labels, reduction="none").numpy()


def loss_variance(losses: np.ndarray) -> np.ndarray:
    """Per-sample (population) variance over models: ``losses`` is ``(models, samples)``."""
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[0] < 1:
        raise DataError(f"losses must be (models, samples), got shape {losses.shape}")
    return losses.var(axis=0)


def difficulty_degree(variance: np.ndarray, alpha: float) -> np.ndarray:
    """Eq. 2: ``d_i = α + (1 − α)(v_i − V_min)/(V_max − V_min)``; all ones when ``V_max = V_min``."""
    if not 0.0 <= alpha <= 1.0:
        raise ConfigError(f"alpha must be in [0, 1], got {alpha}")
    v = np.asarray(variance, dtype=np.float64)
    span = float(v.max() - v.min()) if v.size else 0.0
    if span <= 0.0:
        return np.ones_like(v)
    return alpha + (1.0 - alpha) * (v - v.min()) / span


def split_agreement(variance: np.ndarray, hard) -> dict:
    """Agreement of the variance split with ground-truth hard flags.

    ``topk``: the ``k`` highest-variance samples are called hard, ``k`` = number of truly hard
    samples (the split has the truth's proportions); ``median``: above-median variance is hard;
    ``auroc``: probability that a random hard sample has higher variance than a random easy one
    (ties count half). Agreement = share of samples whose split side matches the truth.
    ``topk_chance`` is what a random split of the same proportions agrees on average,
    ``q² + (1 − q)²`` with ``q`` the hard share (0.82 for 10% hard; 0.5 for a balanced truth):
    agreement is only informative above it.
    """
    v = np.asarray(variance, dtype=np.float64)
    hard = np.asarray(hard, dtype=bool)
    if v.shape != hard.shape:
        raise DataError(f"{v.shape[0]} variances for {hard.shape[0]} hard flags")
    n, k = len(v), int(hard.sum())
    order = np.argsort(-v, kind="stable")
    top = np.zeros(n, dtype=bool)
    top[order[:k]] = True
    median = v > np.median(v)
    ranks = rankdata(v, method="average")
    auroc = ((ranks[hard].sum() - k * (k + 1) / 2) / (k * (n - k))) if 0 < k < n else float("nan")
    q = k / n
    return {"topk": float((top == hard).mean()), "topk_chance": q * q + (1 - q) * (1 - q),
            "median": float((median == hard).mean()), "auroc": float(auroc), "n": n, "n_hard": k,
            "low_variance_easy_precision": float((~hard[~top]).mean()) if (~top).any() else float("nan")}


# ------------------------------------------------------------------------------------------ glue

@dataclass
class DifficultyResult:
    losses: np.ndarray                 # (levels, samples)
    variance: np.ndarray               # (samples,)
    sparsities: list[float]            # targets
    achieved: list[float]              # measured share of zero weights in the prunable linears
    schedule: str                      # human-readable description of how the pruned models were made
    agreement: dict | None = None      # split_agreement with the training set's hard flags, if known
    cache_path: str = ""
    from_cache: bool = False
    dev_agreement: dict | None = None  # the same on the held-out dev set (the paper's measure)

    def degrees(self, alpha: float) -> np.ndarray:
        return difficulty_degree(self.variance, alpha)

    def summary(self) -> dict:
        return {"sparsities": self.sparsities, "achieved_sparsities": self.achieved, "schedule": self.schedule,
                "agreement": self.agreement, "dev_agreement": self.dev_agreement, "variance_mean": float(self.variance.mean()),
                "mean_loss_per_level": [float(x) for x in self.losses.mean(axis=1)],
                "cache": self.cache_path, "from_cache": self.from_cache}


def _independent_model(pretrained, tokenizer, train_set, train_config, work_dir, sparsity: float, seed: int):
    """The pre-trained model fine-tuned on the task with iterative magnitude pruning to ``sparsity``."""
    if pretrained is None:
        raise ConfigError("the independent difficulty schedule fine-tunes the pre-trained model: pass `pretrained`")
    transformers.set_seed(seed)
    model = pretrained()
    pruner = MagnitudePruner(model, "global")
    run_dir = Path(work_dir) / f"difficulty-independent-{sparsity:g}"
    shutil.rmtree(run_dir, ignore_errors=True)
    model = fine_tune(model, tokenizer, train_set, run_dir, replace(train_config, seed=seed, save_steps=10 ** 9),
                      callbacks=[MagnitudeCallback(pruner, CubicSchedule(sparsity))], resume=False)
    shutil.rmtree(run_dir, ignore_errors=True)
    pruner.prune_to(sparsity)
    return model, pruner


def compute_difficulty(teacher, tokenizer, train_set, train_config, work_dir: str | Path,
                       cache_dir: str | Path | None = None, config: DifficultyConfig | None = None,
                       seed: int = 0, dev_set=None, pretrained=None) -> DifficultyResult:
    """Per-sample losses under the pruned models and their variance (cached). ``dev_set``: also
    score the held-out dev set (agreement with its hardness); ``pretrained``: a function returning
    a fresh pre-trained model (needed by the ``independent`` schedule)."""
    config = config or DifficultyConfig()
    digest = cache_key({"train": train_set.fingerprint(), "teacher": model_fingerprint(teacher), "seed": seed,
                        "max_length": train_config.max_length, "batch": train_config.batch_size,
                        **({"dev": dev_set.fingerprint()} if dev_set is not None else {}),
                        **({"train_config": asdict(train_config)} if config.schedule == "independent" else {}),
                        **asdict(config)})
    cache = Path(cache_dir if cache_dir is not None else Path(work_dir) / "cache") / f"difficulty-{digest}.npz"
    cached = load_npz(cache)
    if cached is not None and cached["losses"].shape == (len(config.sparsities), len(train_set)):
        log.info("difficulty from cache %s", cache)
        losses, achieved, from_cache = cached["losses"], cached["achieved"].tolist(), True
        dev_losses = cached["dev_losses"] if "dev_losses" in cached else None
    else:
        losses, achieved, dev_losses = [], [], []
        model = copy.deepcopy(teacher) if config.schedule != "independent" else None
        for level, sparsity in enumerate(config.sparsities):
            if config.schedule == "oneshot" and level > 0:
                model = copy.deepcopy(teacher)
            if config.schedule == "independent":
                model, pruner = _independent_model(pretrained, tokenizer, train_set, train_config, work_dir,
                                                   sparsity, seed + level)
            else:
                pruner = MagnitudePruner(model, "global")
                pruner.prune_to(sparsity)
            if config.recovery_epochs > 0 and config.schedule != "independent":
                run_dir = Path(work_dir) / f"difficulty-recovery-{sparsity:g}"
                shutil.rmtree(run_dir, ignore_errors=True)
                recovery = replace(train_config, epochs=config.recovery_epochs, max_steps=-1, seed=seed + level,
                                   learning_rate=config.learning_rate, save_steps=10 ** 9)
                model = fine_tune(model, tokenizer, train_set, run_dir, recovery,
                                  callbacks=[HoldZeros(list(zip(pruner.linears, pruner.masks)))], resume=False)
                shutil.rmtree(run_dir, ignore_errors=True)
            achieved.append(pruner.sparsity())
            logits = predict_logits(model, tokenizer, train_set, max_length=train_config.max_length)
            losses.append(per_sample_losses(logits, train_set.labels))
            if dev_set is not None:
                dev_logits = predict_logits(model, tokenizer, dev_set, max_length=train_config.max_length)
                dev_losses.append(per_sample_losses(dev_logits, dev_set.labels))
            log.info("difficulty level %.2f: mean train loss %.4f", sparsity, losses[-1].mean())
        losses, from_cache = np.stack(losses).astype(np.float64), False
        dev_losses = np.stack(dev_losses).astype(np.float64) if dev_losses else None
        atomic_save_npz(cache, losses=losses, achieved=np.asarray(achieved),
                        sparsities=np.asarray(config.sparsities),
                        **({"dev_losses": dev_losses} if dev_losses is not None else {}))
    variance = loss_variance(losses)
    agreement = split_agreement(variance, train_set.hard) if train_set.hard is not None else None
    dev_agreement = None
    if dev_set is not None and dev_losses is not None and dev_set.hard is not None:
        dev_agreement = split_agreement(loss_variance(dev_losses), dev_set.hard)
    result = DifficultyResult(losses, variance, list(config.sparsities), [float(a) for a in achieved],
                              config.describe(), agreement, str(cache), from_cache, dev_agreement)
    atomic_write_json(cache.with_suffix(".json"), result.summary())
    return result


def context_difficulty(ctx, config: DifficultyConfig | None = None) -> DifficultyResult:
    """``compute_difficulty`` for a compression context (its teacher, training set and cache)."""
    if ctx.teacher is None:
        raise ConfigError("difficulty estimation prunes the fine-tuned teacher, but the context has none")

    def pretrained():
        return (ctx.kind or kind_for(ctx.task)).load_model(ctx.base_model, ctx.task, ctx.seed)[0]

    return compute_difficulty(ctx.teacher, ctx.tokenizer, ctx.task.train, ctx.train_config, ctx.work_dir,
                              context_cache_dir(ctx), config, ctx.seed, dev_set=ctx.task.dev, pretrained=pretrained)
