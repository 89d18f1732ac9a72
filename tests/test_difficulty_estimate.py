"""Stand-alone difficulty estimation on a tiny BERT: files written, agreement reported, cache reused."""
import json

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.objectives.rmc.config import DifficultyConfig
from forgetless.objectives.rmc.estimate import estimate_difficulty
from forgetless.training.trainer import TrainConfig
from test_objectives_prepare import tiny_bert, tiny_tokenizer


def test_estimate_difficulty_writes_report(tmp_path):
    tokenizer = tiny_tokenizer()
    tiny_bert(tokenizer).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    config = DifficultyConfig(sparsities=(0.3, 0.6, 0.9), recovery_epochs=0)
    summary = estimate_difficulty(task, tmp_path / "out", model=str(tmp_path / "tiny"), train_config=train,
                                  config=config)
    assert summary["agreement"]["n"] == 48 and summary["agreement"]["n_hard"] == 12
    assert "cheaper than the paper" in summary["schedule"] and not summary["from_cache"]
    rows = (tmp_path / "out" / "difficulty.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["index", "loss@0.3", "loss@0.6", "loss@0.9", "variance", "degree", "hard"]
    assert len(rows) == 49
    degrees = [float(r.split("\t")[5]) for r in rows[1:]]
    assert min(degrees) == 0.5 and max(degrees) == 1.0
    assert (tmp_path / "out" / "difficulty.png").stat().st_size > 1000
    again = estimate_difficulty(task, tmp_path / "out", model=str(tmp_path / "tiny"), train_config=train, config=config)
    assert again["from_cache"] and again["agreement"] == summary["agreement"]
    assert json.loads((tmp_path / "out" / "difficulty.json").read_text())["alpha"] == 0.5
