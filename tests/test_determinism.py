"""Determinism (issue 9): the same seed twice gives bit-identical weights for every compression
method, nash and cofi included; seeds cover model construction (tiny models are built inside each
repetition) as well as masks, scoring subsets and training. A different seed gives other weights."""
from __future__ import annotations

import copy

import pytest
import torch
import transformers

from forgetless.data.tasks import load_task
from forgetless.kinds import kind_for
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS, OBJECTIVES
from forgetless.training.trainer import TrainConfig

FAST = {
    "truncate": {"layers": 1},
    "magnitude": {"sparsity": 0.5, "prune_every": 2},
    "heads": {"prune_count": 3, "scoring_examples": 16, "scoring_batch": 8, "scoring_length": 16},
    "rahp": {"ratio": 0.5, "scoring_examples": 8, "scoring_batch": 4, "scoring_length": 16, "rows_per_pass": 16},
    "block-influence": {"remove": 1, "calibration_examples": 16, "calibration_batch": 8, "calibration_length": 16},
    "nash": {"decoder_layers": 2, "encoder_sparsity": 0.3, "finetune_epochs": 0.5},
    "cofi": {"sparsity": 0.4, "finetune_epochs": 0.5},
    "quantize": {"dtype": "int8"},
    "wanda": {"sparsity": 0.5, "calibration_examples": 8, "calibration_length": 16},
    "sparsegpt": {"sparsity": 0.5, "pattern": "2:4", "calibration_examples": 8, "calibration_length": 16},
    "gptq": {"bits": 4, "group_size": 16, "calibration_examples": 8, "calibration_length": 16},
    "rtn": {"bits": 4, "group_size": 16},
}


def test_every_method_is_covered():
    assert set(FAST) == set(METHODS.names())


def compress_once(name: str, seed: int, work_dir) -> dict[str, torch.Tensor]:
    method = METHODS.get(name)(METHODS.make_config(name, FAST[name]))
    generation = method.config.seq2seq_only
    task = load_task("synthetic-lookup" if generation else "synthetic", seed=seed, train_size=32, eval_size=8)
    kind = kind_for(task, method.config)
    transformers.set_seed(seed)
    teacher, tokenizer = kind.load_model("tiny-t5" if generation else "tiny-bert", task, seed)
    objective = OBJECTIVES.build(method.config.default_objective)
    ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher.eval(), work_dir=work_dir, kind=kind,
                             train_config=TrainConfig(epochs=1, batch_size=8, max_length=32, learning_rate=1e-3,
                                                      save_steps=1000, progress=False, seed=seed),
                             objective=objective, seed=seed, base_model="tiny-bert")
    ctx.objective_extras = objective.prepare(ctx) or None
    transformers.set_seed(seed)
    model = method.compress(copy.deepcopy(teacher), ctx)
    return _tensors(model.state_dict())


def _tensors(state: dict) -> dict[str, torch.Tensor]:
    """Every tensor of a state dict (int8 packed weights as their integer representation)."""
    out = {}
    for key, value in state.items():
        parts = value if isinstance(value, tuple) else (value,)
        for i, part in enumerate(parts):
            if isinstance(part, torch.Tensor):
                out[f"{key}.{i}"] = (part.int_repr() if part.is_quantized else part).detach().clone()
    return out


@pytest.mark.parametrize("name", sorted(FAST))
def test_same_seed_same_weights(name, tmp_path):
    torch.set_num_threads(1)
    first = compress_once(name, 0, tmp_path / "a")
    torch.manual_seed(1234)  # global RNG state in between must not matter
    second = compress_once(name, 0, tmp_path / "b")
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key


def test_another_seed_other_weights(tmp_path):
    torch.set_num_threads(1)
    a, b = compress_once("nash", 0, tmp_path / "a"), compress_once("nash", 1, tmp_path / "b")
    assert any(a[k].shape != b[k].shape or not torch.equal(a[k], b[k]) for k in a if k in b)
