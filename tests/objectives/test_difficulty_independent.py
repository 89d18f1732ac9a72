"""The paper's difficulty schedule (Du et al. §5.1): independent IMP fine-tunings of the pre-trained
model, one per sparsity; agreement with ground-truth hardness on the held-out dev set too."""
import numpy as np
import torch

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.objectives.rmc.config import DifficultyConfig
from forgetless.objectives.rmc.difficulty import compute_difficulty
from forgetless.training.trainer import TrainConfig
from test_difficulty_estimate import estimate_difficulty
from tiny_bert import tiny_bert, tiny_tokenizer

torch.set_num_threads(1)


def test_independent_schedule_prunes_fresh_pretrained_models(tmp_path):
    tokenizer = tiny_tokenizer()
    tiny_bert(tokenizer).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    config = DifficultyConfig(sparsities=(0.3, 0.6), schedule="independent")
    summary = estimate_difficulty(task, tmp_path / "out", model=str(tmp_path / "tiny"), train_config=train,
                                  config=config)
    assert "independent runs" in summary["schedule"] and "pre-trained" in summary["schedule"]
    assert np.allclose(summary["achieved_sparsities"], [0.3, 0.6], atol=0.01)
    assert summary["agreement"]["n"] == 48 and summary["dev_agreement"]["n"] == 16
    assert summary["dev_agreement"]["n_hard"] == sum(task.dev.hard)

    # pruned models built from the pre-trained model, not from the teacher: the losses do not depend on it
    calls = []

    def pretrained():
        calls.append(1)
        torch.manual_seed(0)
        return tiny_bert(tokenizer)

    teacher_a, teacher_b = tiny_bert(tokenizer), tiny_bert(tokenizer)
    with torch.no_grad():
        for p in teacher_b.parameters():
            p.add_(1.0)
    results = [compute_difficulty(t, tokenizer, task.train, train, tmp_path / f"w{i}", tmp_path / f"c{i}", config,
                                  0, dev_set=task.dev, pretrained=pretrained) for i, t in enumerate((teacher_a, teacher_b))]
    assert len(calls) == 4  # one fresh pre-trained model per sparsity and run
    assert np.allclose(results[0].losses, results[1].losses, atol=1e-5)
    assert results[0].dev_agreement == results[1].dev_agreement
