"""NASH's distillation objective (Ko et al. 2023, §4.3) for generation models:

    L = w_kd · L_pred + w_ce · CE + λ_enc · L_h^enc + λ_dec · L_h^dec

``L_pred`` is the token-level KL divergence between teacher and student next-token distributions
on the target positions (``token_kd_loss``), reduced per option ``kl_reduction``: ``token``
(default here: the mean over target tokens) or ``batchmean`` (the CoFi-style code NASH builds on:
``kl_div(..., reduction="batchmean")``, the sum over a sequence's target tokens averaged over
sequences). The reduction sets how λ_enc / λ_dec weigh against L_pred: ``batchmean`` is about
(target tokens per sequence) times larger, so the paper's λ = 0.001 is relatively weaker there;
``L_h`` the MSE between each student layer's output and
the teacher layer it was initialised from (``hidden_mse``; the pairs come from the compression
method's layer map, e.g. NASH's shallow decoder keeps teacher layers [0, 2, 4] → student layers
0, 1, 2 are distilled from them). The method's own regulariser (NASH's Lagrangian sparsity term)
is added by the Trainer. The teacher runs online (a seq2seq teacher's per-token distributions over
the vocabulary are too large to cache).
"""
from __future__ import annotations

import torch

from ...errors import ConfigError
from ...models.gates import HookSet
from ...training.objective import Objective, cross_entropy
from .config import DIRECTIONS, KL_REDUCTIONS, NashDistilConfig


def token_kd_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, mask: torch.Tensor,
                  temperature: float = 1.0, direction: str = "forward", reduction: str = "token") -> torch.Tensor:
    """Token-level KL divergence over the target tokens where ``mask`` (batch × length) is true,
    scaled by T²: averaged over those tokens (``token``) or summed per sequence and averaged over the
    batch (``batchmean``, CoFi-style code).

    ``forward``: KL(p_teacher ‖ p_student), what the CoFi / NASH code computes
    (``kl_div(log_softmax(student), softmax(teacher))``); ``reverse``: KL(p_student ‖ p_teacher),
    the notation D_KL(p_s ‖ p_t) of the papers read literally.
    """
    t = temperature
    log_s = torch.log_softmax(student_logits.float() / t, dim=-1)
    log_t = torch.log_softmax(teacher_logits.float() / t, dim=-1)
    if direction == "forward":
        per_token = (log_t.exp() * (log_t - log_s)).sum(-1)
    elif direction == "reverse":
        per_token = (log_s.exp() * (log_s - log_t)).sum(-1)
    else:
        raise ConfigError(f"kd direction must be one of {DIRECTIONS}, got {direction!r}")
    mask = mask.to(per_token.dtype)
    if reduction == "token":
        return (per_token * mask).sum() / mask.sum().clamp_min(1.0) * t * t
    if reduction == "batchmean":
        return (per_token * mask).sum() / max(per_token.shape[0], 1) * t * t
    raise ConfigError(f"kl_reduction must be one of {KL_REDUCTIONS}, got {reduction!r}")


def hidden_mse(student: list[torch.Tensor], teacher: list[torch.Tensor], pairs: list[tuple[int, int]],
               mask: torch.Tensor | None = None) -> torch.Tensor:
    """Σ over (student layer, teacher layer) pairs of the MSE between their outputs, averaged over
    non-padding positions (``mask``: batch × length)."""
    total = student[0].new_zeros((), dtype=torch.float32)
    for s, t in pairs:
        diff = (student[s].float() - teacher[t].float()) ** 2
        if mask is None:
            total = total + diff.mean()
        else:
            m = mask.to(diff.dtype)[..., None]
            total = total + (diff * m).sum() / (m.sum() * diff.shape[-1]).clamp_min(1.0)
    return total


class NashDistil(Objective):
    """Token-level KD + hidden-state MSE from the context's teacher (NASH §4.3)."""

    def __init__(self, config: NashDistilConfig):
        super().__init__(config)
        self.ctx = None
        self._logged: dict[str, float] = {}

    def prepare(self, ctx) -> dict[str, list]:
        if ctx.teacher is None:
            raise ConfigError("nash-distil distils from a teacher, but the context has none")
        self.ctx = ctx
        return {}

    def pairs(self, stack: str, student_depth: int, teacher_depth: int) -> list[tuple[int, int]]:
        """(student layer, teacher layer) pairs from the method's layer map; identity when the
        depths agree and the method recorded none."""
        kept = (getattr(self.ctx, "layer_map", None) or {}).get(stack)
        if kept is None:
            return list(zip(range(student_depth), range(teacher_depth))) if student_depth == teacher_depth else []
        return list(enumerate(kept))[:student_depth]

    def compute_loss(self, model, inputs, extras):
        c = self.config
        teacher = self.ctx.teacher
        want_hidden = c.lambda_enc > 0 or c.lambda_dec > 0
        with HookSet() as hooks:
            student_h = hooks.record_outputs(model) if want_hidden else {}
            outputs = model(**inputs)
        with torch.no_grad(), HookSet() as hooks:
            teacher_h = hooks.record_outputs(teacher) if want_hidden else {}
            teacher_logits = teacher(**inputs).logits
        labels = inputs["labels"]
        target_mask = labels != -100
        loss = outputs.logits.new_zeros((), dtype=torch.float32)
        if c.kd_weight:
            kd = token_kd_loss(outputs.logits, teacher_logits, target_mask, c.temperature, c.direction, c.kl_reduction)
            loss = loss + c.kd_weight * kd
            self._logged["kd"] = float(kd.detach())
        if c.ce_weight:
            loss = loss + c.ce_weight * cross_entropy(outputs.logits, labels)
        masks = {"encoder": inputs.get("attention_mask"), "decoder": target_mask}
        for stack, weight in (("encoder", c.lambda_enc), ("decoder", c.lambda_dec)):
            if not weight or stack not in student_h:
                continue
            pairs = self.pairs(stack, len(student_h[stack]), len(teacher_h[stack]))
            if pairs:
                mse = hidden_mse(student_h[stack], teacher_h[stack], pairs, masks[stack])
                loss = loss + weight * mse
                self._logged[f"mse_{stack[:3]}"] = float(mse.detach())
        return loss, outputs

    def log_values(self) -> dict[str, float]:
        return dict(self._logged)
