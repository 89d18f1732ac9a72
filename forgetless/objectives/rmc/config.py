"""Configs of RMC (Du et al., "What do Compressed Large Language Models Forget?", §5): how sample
difficulty is estimated (§5.1, ``DifficultyConfig``), eq. 2's α per task, and the ``rmc`` objective's
options (``RMCConfig``: Distil's λ and T plus the difficulty schedule)."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ...options import Config, option
from ...registry import OBJECTIVES
from ..distil.config import DistilConfig

# Eq. 2's α per task (paper: MNLI 0.5, FEVER 0.3, QQP 0.2); tasks not listed use DEFAULT_ALPHA.
TASK_ALPHA = {"mnli": 0.5, "mnli-small": 0.5, "synthetic": 0.5, "fever": 0.3, "qqp": 0.2, "qqp-slice": 0.2}
DEFAULT_ALPHA = 0.5
DEFAULT_SPARSITIES = (0.2, 0.35, 0.5, 0.65, 0.85)
SCHEDULES = ("chain", "oneshot", "independent")
SCHEDULE_HELP = ("how the pruned models are made: chain (one copy walks up the levels, fast), oneshot (each level "
                 "from the teacher) or independent (paper §5.1: each an IMP fine-tuning of the pre-trained model)")


def default_alpha(task_name: str) -> float:
    return TASK_ALPHA.get(task_name, DEFAULT_ALPHA)


def check_sparsities(flag: str, sparsities) -> tuple[float, ...]:
    """The levels sorted; at least two (a variance needs two models), each in (0, 1)."""
    levels = tuple(sorted(float(s) for s in sparsities))
    if len(levels) < 2:
        raise ConfigError(f"{flag} {','.join(f'{s:g}' for s in levels)}: difficulty needs at least two sparsity "
                          f"levels for a variance")
    if any(not 0.0 < s < 1.0 for s in levels):
        raise ConfigError(f"{flag} {','.join(f'{s:g}' for s in levels)}: every sparsity must be in (0, 1)")
    return levels


@dataclass
class DifficultyConfig(Config):
    """Variance-based difficulty estimation (§5.1): the pruned models and their recovery."""

    sparsities: tuple[float, ...] = option(DEFAULT_SPARSITIES, help="sparsity levels of the pruned models")
    schedule: str = option("chain", choices=SCHEDULES, help=SCHEDULE_HELP)
    recovery_epochs: float = option(0.5, help="masked fine-tune after pruning at each level (0 = none)", low=0)
    learning_rate: float = option(5e-5, help="learning rate of the recovery fine-tunes", low=0, high=1, low_open=True)

    def check(self) -> None:
        self.sparsities = check_sparsities(self.flag("sparsities"), self.sparsities)

    def describe(self) -> str:
        if self.schedule == "independent":
            return (f"independent runs (Du et al. §5.1): the pre-trained model fine-tuned on the task with iterative "
                    f"magnitude pruning (cubic schedule) to each of {', '.join(f'{s:g}' for s in self.sparsities)}")
        how = ("iterative chain: each level pruned further from the previous one" if self.schedule == "chain"
               else "one-shot: each level pruned from the teacher")
        recovery = (f"{self.recovery_epochs:g}-epoch masked recovery fine-tune per level" if self.recovery_epochs
                    else "no recovery fine-tune")
        return (f"global magnitude pruning of the encoder linears at sparsities "
                f"{', '.join(f'{s:g}' for s in self.sparsities)} ({how}; {recovery}); cheaper than the "
                f"paper's full iterative-magnitude-pruning training at every level")


@OBJECTIVES.register("rmc", implementation=".objective:RMC")
@dataclass
class RMCConfig(DistilConfig):
    uses_difficulty = True
    alpha: float | None = option(None, help="eq. 2's α, the smoothing degree of the easiest sample (default: per "
                                            "task, MNLI 0.5, FEVER 0.3, QQP 0.2, others 0.5)", low=0, high=1)
    sparsities: tuple[float, ...] = option(DEFAULT_SPARSITIES, help="sparsity levels of the pruned models whose "
                                                                   "loss variance measures difficulty")
    difficulty_schedule: str = option("chain", choices=SCHEDULES, help=SCHEDULE_HELP)
    recovery_epochs: float = option(0.5, help="masked fine-tune after pruning at each difficulty level (0 = none)",
                                    low=0)
    difficulty_learning_rate: float = option(5e-5, help="learning rate of the difficulty recovery fine-tunes",
                                             low=0, high=1, low_open=True)

    def check(self) -> None:
        self.sparsities = check_sparsities(self.flag("sparsities"), self.sparsities)

    def difficulty_config(self) -> DifficultyConfig:
        return DifficultyConfig(tuple(self.sparsities), self.difficulty_schedule, self.recovery_epochs,
                                self.difficulty_learning_rate)
