"""The whole chain with a robust objective and a smaller (truncated) student: teacher → difficulty →
RMC distillation → finalize → evaluate → report card (Du et al. §5 applied to Truncated students)."""
from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.metrics.speed import SpeedConfig
from forgetless.config import RunConfig
from forgetless.pipeline import run_and_save
from forgetless.registry import METHODS, OBJECTIVES
from forgetless.training.trainer import TrainConfig
from tiny_bert import tiny_bert, tiny_tokenizer


def test_rmc_distils_into_a_truncated_student(tmp_path):
    tokenizer = tiny_tokenizer()
    tiny_bert(tokenizer).save_pretrained(tmp_path / "tiny")
    tokenizer.save_pretrained(tmp_path / "tiny")
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    run = RunConfig(model=str(tmp_path / "tiny"), method=METHODS.make_config("truncate", {"layers": 1}),
                    objective=OBJECTIVES.make_config("rmc", {"sparsities": [0.3, 0.6], "recovery_epochs": 0}), train=train, progress=False,
                    speed=SpeedConfig(batch_size=4, seq_len=32, warmup=0, repeats=1))
    card = run_and_save(task, run, tmp_path / "out").card.to_json()
    assert card["method"]["objective"] == "rmc"
    assert card["params"]["compressed"]["total"] < card["params"]["base"]["total"]
    assert any(note.startswith("RMC difficulty") and "agreement" in note for note in card["notes"])
    assert list((tmp_path / "out" / "work" / "cache").glob("difficulty-*.npz"))
