"""Determinism (issue 9): the same seed twice gives bit-identical weights for every registered
compression method (a plugin's too: ``test_plugin_method.py``), nash and cofi included, each run with
its config's own ``smoke`` options (no table here: a new method folder is covered as it is); seeds
cover model construction (heads and tiny models are built inside each repetition) as well as masks,
scoring subsets and training. A different seed gives other weights."""
from __future__ import annotations

import copy

import pytest
import torch
import transformers

from conftest import save_tiny_bert
from forgetless.data.tasks import load_task
from forgetless.kinds import kind_for
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS, OBJECTIVES
from forgetless.training.trainer import TrainConfig

@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory, minilm_tokenizer) -> str:
    """A 3-layer BERT encoder (the shape every smoke config fits: ``test_contract.py``); each run adds
    its own seeded classification head."""
    return save_tiny_bert(tmp_path_factory.mktemp("bert3"), minilm_tokenizer, layers=3, intermediate=48, positions=130)


def compress_once(name: str, seed: int, work_dir, bert_dir: str) -> dict[str, torch.Tensor]:
    method = METHODS.build(METHODS.make_config(name, METHODS.config_class(name).smoke))
    generation = method.config.seq2seq_only
    task = load_task("synthetic-lookup" if generation else "synthetic", seed=seed, train_size=32, eval_size=8)
    kind = kind_for(task, method.config)
    transformers.set_seed(seed)
    teacher, tokenizer = kind.load_model("tiny-t5" if generation else bert_dir, task, seed)
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


@pytest.mark.parametrize("name", METHODS.names())
def test_same_seed_same_weights(name, tmp_path, bert_dir):
    torch.set_num_threads(1)
    first = compress_once(name, 0, tmp_path / "a", bert_dir)
    torch.manual_seed(1234)  # global RNG state in between must not matter
    second = compress_once(name, 0, tmp_path / "b", bert_dir)
    assert first.keys() == second.keys()
    for key in first:
        assert torch.equal(first[key], second[key]), key


def test_another_seed_other_weights(tmp_path, bert_dir):
    torch.set_num_threads(1)
    name = next(n for n in METHODS.names() if METHODS.config_class(n).seq2seq_only)  # one that trains masks
    a, b = compress_once(name, 0, tmp_path / "a", bert_dir), compress_once(name, 1, tmp_path / "b", bert_dir)
    assert any(a[k].shape != b[k].shape or not torch.equal(a[k], b[k]) for k in a if k in b)
