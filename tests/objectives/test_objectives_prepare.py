"""Objectives end to end on a tiny BERT: prepare() columns, disk caches, and training a student
with every objective through the shared Trainer (``fine_tune``)."""
import numpy as np
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.objectives.rmc.config import DifficultyConfig
from forgetless.objectives.rmc.difficulty import compute_difficulty
from forgetless.methods.base import CompressionContext
from forgetless.registry import OBJECTIVES
from forgetless.training.trainer import TrainConfig, fine_tune
from tiny_bert import tiny_bert, tiny_tokenizer


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("rmc")
    tokenizer = tiny_tokenizer()
    task = synthetic_shortcut_task(n_train=96, n_dev=32, n_challenge=32, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    assert tokenizer.unk_token_id not in tokenizer(task.train.text_a[0], task.train.text_b[0])["input_ids"]
    teacher = fine_tune(tiny_bert(tokenizer), tokenizer, task.train, root / "teacher", train, resume=False)
    first = root / "first-model"
    tiny_bert(tokenizer, seed=1).save_pretrained(first)
    tokenizer.save_pretrained(first)
    return root, tokenizer, task, teacher, train, first


def context(setup, name):
    root, tokenizer, task, teacher, train, _ = setup
    return CompressionContext(task=task, tokenizer=tokenizer, teacher=teacher, work_dir=root / name,
                              train_config=train, seed=0)


def test_distil_columns_are_cached_teacher_probabilities(setup):
    ctx = context(setup, "distil")
    columns = OBJECTIVES.build("distil").prepare(ctx)
    probs = np.asarray(columns["teacher_probs"])
    assert probs.shape == (96, 2) and np.allclose(probs.sum(1), 1.0, atol=1e-5)
    assert len(list((ctx.work_dir / "cache").glob("teacher-probs-*.npz"))) == 1
    again = OBJECTIVES.build("distil").prepare(ctx)  # from the cache file
    assert np.allclose(np.asarray(again["teacher_probs"]), probs)


def test_smooth_flattens_teacher(setup):
    ctx = context(setup, "distil")  # shares the teacher-probability cache
    raw = np.asarray(OBJECTIVES.build("distil").prepare(ctx)["teacher_probs"])
    smooth = np.asarray(OBJECTIVES.get("smooth")(OBJECTIVES.make_config("smooth", {"degree": 0.5})).prepare(ctx)
                        ["teacher_probs"])
    assert np.all(np.abs(smooth - 0.5) <= np.abs(raw - 0.5) + 1e-6)


def test_difficulty_is_cached_and_reaches_sparsities(setup):
    root, tokenizer, task, teacher, train, _ = setup
    config = DifficultyConfig(sparsities=(0.2, 0.5, 0.8), recovery_epochs=0.25)
    first = compute_difficulty(teacher, tokenizer, task.train, train, root / "diff", root / "diff-cache", config)
    assert first.losses.shape == (3, 96) and first.variance.shape == (96,) and not first.from_cache
    assert np.allclose(first.achieved, [0.2, 0.5, 0.8], atol=0.01)
    assert first.agreement is not None and first.agreement["n_hard"] == sum(task.train.hard)
    second = compute_difficulty(teacher, tokenizer, task.train, train, root / "diff", root / "diff-cache", config)
    assert second.from_cache and np.array_equal(second.variance, first.variance)
    assert len(list((root / "diff-cache").glob("difficulty-*.json"))) == 1
    # a different schedule is a different cache entry
    other = compute_difficulty(teacher, tokenizer, task.train, train, root / "diff", root / "diff-cache",
                               DifficultyConfig(sparsities=(0.2, 0.5), recovery_epochs=0))
    assert not other.from_cache and other.losses.shape == (2, 96)


def test_rmc_prepare_smooths_per_sample(setup):
    ctx = context(setup, "rmc")
    rmc = OBJECTIVES.get("rmc")(OBJECTIVES.make_config("rmc", {"sparsities": "0.3,0.6", "recovery_epochs": 0}))
    columns = rmc.prepare(ctx)
    d = np.asarray(columns["difficulty"])
    assert d.min() == pytest.approx(0.5) and d.max() == pytest.approx(1.0)  # α = 0.5 for "synthetic"
    raw = np.asarray(OBJECTIVES.build("distil").prepare(ctx)["teacher_probs"])
    smoothed = np.asarray(columns["teacher_probs"])
    hardest = int(np.argmax(d))
    assert np.allclose(smoothed[hardest], raw[hardest], atol=1e-5)  # d = 1: unchanged
    assert any("agreement" in note for note in ctx.notes)
    summary = rmc.difficulty_summary(ctx)  # what a sweep reports: the same difficulty, from the cache
    assert summary["alpha"] == rmc.alpha == 0.5 and summary["from_cache"]
    assert summary["variance_mean"] == float(rmc.difficulty.variance.mean())


def test_jtt_weights_from_cached_first_model(setup):
    ctx = context(setup, "jtt")
    config = OBJECTIVES.make_config("jtt", {"first_model": str(setup[5]), "first_epochs": 0.5})
    jtt = OBJECTIVES.get("jtt")(config)
    weights = np.asarray(jtt.prepare(ctx)["sample_weight"])
    assert weights.shape == (96,) and weights.mean() == pytest.approx(1.0, abs=1e-5)
    values = np.unique(np.round(weights, 5))
    assert len(values) <= 2 and (len(values) == 1 or values[1] / values[0] == pytest.approx(2.0, abs=1e-4))
    assert jtt.summary["error_set_size"] == int((weights > 1.0 + 1e-6).sum()) or len(values) == 1
    assert len(list((ctx.work_dir / "cache").glob("jtt-errors-*.npz"))) == 1
    again = OBJECTIVES.get("jtt")(config).prepare(ctx)
    assert np.allclose(again["sample_weight"], weights)


@pytest.mark.parametrize("name", ["ce", "distil", "smooth", "rmc", "focal", "jtt"])
def test_every_objective_trains_a_smaller_student(setup, name):
    root, tokenizer, task, teacher, train, first = setup
    options = {"rmc": {"sparsities": "0.3,0.6", "recovery_epochs": 0}, "jtt": {"first_model": str(first),
                                                                               "first_epochs": 0.5}}.get(name, {})
    objective = OBJECTIVES.get(name)(OBJECTIVES.make_config(name, options))
    ctx = context(setup, f"student-{name}")
    extras = objective.prepare(ctx)
    torch.manual_seed(0)
    student = BertForSequenceClassification(BertConfig(
        vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=64, num_labels=2))
    before = [p.detach().clone() for p in student.parameters()]
    student = fine_tune(student, tokenizer, task.train, ctx.work_dir / "run",
                        TrainConfig(max_steps=2, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False),
                        objective, extras or None, resume=False)
    assert any(not torch.equal(a, b) for a, b in zip(before, student.parameters()))


def test_missing_column_is_a_config_error():
    from forgetless.errors import ConfigError

    with pytest.raises(ConfigError, match="prepare"):
        OBJECTIVES.build("rmc")(torch.zeros(2, 2), torch.tensor([0, 1]), {})
