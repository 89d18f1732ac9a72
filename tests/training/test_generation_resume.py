"""Generation runs share the one Trainer's resume guard: a NASH pruning phase (L0 masks, the
Lagrangian regulariser, the nash-distil objective) killed mid-training resumes to the same weights,
masks and multipliers as an uninterrupted run; checkpoints of other settings are set aside."""
import copy

import pytest
import torch
from transformers import TrainerCallback

from forgetless.data.tasks import load_task
from forgetless.kinds import KINDS
from forgetless.methods.base import CompressionContext
from forgetless.methods.nash.l0_masks import LagrangianRegularizer
from forgetless.methods.nash.config import NashConfig
from forgetless.methods.nash.method import Nash
from forgetless.models.loading import load_seq2seq
from forgetless.registry import OBJECTIVES
from forgetless.training.trainer import TrainConfig, fine_tune


class Crash(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:
            raise KeyboardInterrupt("simulated kill")


def _setup(tmp_path, task):
    teacher, tok = load_seq2seq("tiny-t5", tokenizer=task.tokenizer, seed=0)
    objective = OBJECTIVES.build("nash-distil")
    config = TrainConfig(epochs=1, batch_size=8, save_steps=2, progress=False, learning_rate=1e-3, max_length=64)
    ctx = CompressionContext(task=task, tokenizer=tok, teacher=teacher.eval(), work_dir=tmp_path, train_config=config,
                             objective=objective, kind=KINDS["seq2seq"])
    objective.prepare(ctx)
    method = Nash(NashConfig(decoder_layers=2, encoder_sparsity=0.3))
    student = method.prepare(copy.deepcopy(teacher), ctx)
    ctx.layer_map = method.layers
    regularizer = LagrangianRegularizer(student.l0_masks, 0.3, 2, 0.05)
    return student, tok, objective, config, regularizer


def test_nash_pruning_phase_resumes_bit_identical(tmp_path):
    torch.set_num_threads(1)
    task = load_task("synthetic-lookup", train_size=48, eval_size=4)
    student, tok, objective, config, reg = _setup(tmp_path / "a", task)
    straight = fine_tune(student, tok, task.train, tmp_path / "straight", config, objective, regularizer=reg)

    torch.manual_seed(99)  # another global RNG state must not matter after resume
    student, tok, objective, config, reg = _setup(tmp_path / "b", task)
    with pytest.raises(KeyboardInterrupt):
        fine_tune(student, tok, task.train, tmp_path / "resumed", config, objective, callbacks=[Crash()], regularizer=reg)
    assert sorted(p.name for p in (tmp_path / "resumed").glob("checkpoint-*")) == ["checkpoint-2"]
    student, tok, objective, config, reg = _setup(tmp_path / "c", task)
    assert not list(tmp_path.glob("resumed.stale-*"))
    resumed = fine_tune(student, tok, task.train, tmp_path / "resumed", config, objective, regularizer=reg)
    assert not list(tmp_path.glob("resumed.stale-*"))  # resumed, not restarted
    a, b = straight.state_dict(), resumed.state_dict()
    assert any("l0_masks.log_alpha" in k for k in a) and "l0_masks.lambda_1" in a
    for name in a:
        assert torch.equal(a[name], b[name]), name
    assert float(a["l0_masks.lambda_1"]) != 0.0  # the multipliers really trained (ascent)

    other = TrainConfig(epochs=1, batch_size=4, save_steps=2, progress=False, learning_rate=1e-3, max_length=64)
    student, tok, objective, _, reg = _setup(tmp_path / "d", task)
    fine_tune(student, tok, task.train, tmp_path / "resumed", other, objective, regularizer=reg)
    assert len(list(tmp_path.glob("resumed.stale-*"))) == 1  # other settings: set aside, not resumed
