"""Iterative magnitude pruning: schedule, exact sparsity, pruned weights stay zero through training."""
import pytest
import torch

from forgetless.errors import ConfigError
from forgetless.methods.magnitude.config import MagnitudeConfig
from forgetless.methods._shared.magnitude import MagnitudePruner, cubic_sparsity, magnitude_masks
from conftest import tiny_classifier


def test_cubic_schedule_by_hand():
    # s_t = s_f + (s_i - s_f)(1 - (t - t0)/(t1 - t0))^3 with t0 = 0, t1 = 70 of 100 steps
    assert cubic_sparsity(0, 100, 0.4) == 0.0
    assert cubic_sparsity(35, 100, 0.4) == pytest.approx(0.4 - 0.4 * 0.5 ** 3)
    assert cubic_sparsity(70, 100, 0.4) == pytest.approx(0.4)
    assert cubic_sparsity(100, 100, 0.4) == pytest.approx(0.4)
    assert cubic_sparsity(10, 100, 0.8, initial=0.2, start_fraction=0.1, end_fraction=0.5) == 0.2


def test_masks_global_and_per_layer():
    a = torch.tensor([[0.1, -0.5], [0.3, 0.05]])
    b = torch.tensor([1.0, -0.2, 0.4, 0.01])
    keep = magnitude_masks([a, b], 0.5, "global")  # 8 weights → prune the 4 smallest |w|
    assert keep[0].tolist() == [[False, True], [True, False]] and keep[1].tolist() == [True, False, True, False]
    keep = magnitude_masks([a, b], 0.25, "layer")
    assert keep[0].sum() == 3 and keep[1].sum() == 3


def test_one_shot_reaches_target():
    model = tiny_classifier("bert")
    embeddings = model.bert.embeddings.word_embeddings.weight.detach().clone()
    classifier = model.classifier.weight.detach().clone()
    pruner = MagnitudePruner(model)
    pruner.prune_to(0.6)
    assert pruner.sparsity() == pytest.approx(0.6, abs=0.01)
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, embeddings)  # never pruned
    assert torch.equal(model.classifier.weight, classifier)


@pytest.mark.parametrize("bad", [{"sparsity": 1.0}, {"sparsity": -0.1}, {"scope": "rows"},
                                 {"start_fraction": 0.8, "end_fraction": 0.5}, {"prune_every": 0}])
def test_config_errors(bad):
    with pytest.raises(ConfigError):
        MagnitudeConfig(**bad)


def test_pruning_during_training_keeps_zeros(tmp_path, tiny_model_dir):
    from forgetless.data.synthetic import synthetic_shortcut_task
    from forgetless.methods.base import CompressionContext
    from forgetless.registry import METHODS
    from forgetless.models.loading import load_classifier
    from forgetless.training.trainer import TrainConfig

    task = synthetic_shortcut_task(n_train=192, n_dev=32, n_challenge=32)
    model, tokenizer = load_classifier(tiny_model_dir, task.label_names)
    embeddings_before = model.bert.embeddings.word_embeddings.weight.detach().clone()
    ctx = CompressionContext(task, tokenizer, model, tmp_path, TrainConfig(epochs=2, batch_size=16, progress=False,
                                                                           learning_rate=1e-3, save_steps=1000))
    method = METHODS.get("magnitude")(MagnitudeConfig(sparsity=0.5, prune_every=3))
    out = method.compress(model, ctx)
    linears = [lin for _, lin in __import__("forgetless").models.adapters.get_adapter(out).prunable_linears(out)]
    zeros = sum(int((lin.weight == 0).sum()) for lin in linears) / sum(lin.weight.numel() for lin in linears)
    assert zeros == pytest.approx(0.5, abs=0.01)
    # the schedule rose gradually and the last mask update was at the target
    steps = [s for _, s in method.callback.history]
    assert steps == sorted(steps) and steps[0] < 0.5 and steps[-1] == pytest.approx(0.5)
    assert torch.equal(out.bert.embeddings.word_embeddings.weight, embeddings_before)  # frozen
    assert "measured sparsity 0.5" in ctx.notes[0]
    # the context records the fine-tune it ran (the card's training section); nothing else to report
    assert ctx.fine_tunes == [{"name": "train-magnitude", "epochs": 2.0, "max_steps": None}]
    assert method.artifacts() == {} and method.plots(tmp_path) == [] and method.report_section() is None


def test_no_recovery_prunes_one_shot_without_training(tmp_path):
    from types import SimpleNamespace

    from forgetless.methods.base import CompressionContext
    from forgetless.registry import METHODS
    from forgetless.training.trainer import TrainConfig

    model = tiny_classifier("bert")
    ctx = CompressionContext(SimpleNamespace(train=None), None, model, tmp_path, TrainConfig(progress=False))
    method = METHODS.build(MagnitudeConfig(sparsity=0.3, recovery="none"))
    assert not method.config.recovers and method.config.name == "magnitude" and method.config.structured is False
    method.compress(model, ctx)
    assert ctx.fine_tunes == [] and "measured sparsity 0.3" in ctx.notes[0]


def test_errors_name_the_flag():
    with pytest.raises(ConfigError, match="sparsity=1.0: must be below 1"):
        MagnitudeConfig(sparsity=1.0)
    with pytest.raises(ConfigError, match="prune_every: 0 is out of range; valid: >= 1"):
        MagnitudeConfig(prune_every=0)
    with pytest.raises(ConfigError, match="initial_sparsity=0.5: must not exceed sparsity=0.4"):
        MagnitudeConfig(initial_sparsity=0.5)
