"""Trainer-based fine-tuning: interrupted runs resume from the last checkpoint; two processes work."""
import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dataclasses import replace
import torch
import transformers
from transformers import TrainerCallback

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.models.io import load_model
from forgetless.models.loading import load_classifier
from forgetless.training.trainer import TrainConfig, fine_tune


class Crash(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 5:
            raise KeyboardInterrupt("simulated kill")


def test_interrupted_run_resumes_and_matches_uninterrupted(tmp_path, tiny_model_dir):
    task = synthetic_shortcut_task(n_train=96, n_dev=16, n_challenge=16)
    config = TrainConfig(epochs=1, batch_size=8, save_steps=4, progress=False, learning_rate=1e-3)

    model, tok = load_classifier(tiny_model_dir, task.label_names)
    straight = fine_tune(model, tok, task.train, tmp_path / "straight", config)

    torch.manual_seed(123)  # a different global RNG state must not matter after resume
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    with pytest.raises(KeyboardInterrupt):
        fine_tune(model, tok, task.train, tmp_path / "resumed", config, callbacks=[Crash()])
    assert sorted(p.name for p in (tmp_path / "resumed").glob("checkpoint-*")) == ["checkpoint-4"]
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    resumed = fine_tune(model, tok, task.train, tmp_path / "resumed", config)
    assert not list(tmp_path.glob("resumed.stale-*"))  # it resumed instead of starting over
    state = json.loads((tmp_path / "resumed" / "checkpoint-12" / "trainer_state.json").read_text())
    assert state["global_step"] == 12
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=name)


@pytest.mark.slow
def test_two_process_training_with_accelerate(tmp_path, tiny_model_dir):
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": ""}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "--main_process_port", "29533", "-m", "forgetless.cli", "finetune", "--model", tiny_model_dir,
           "--train-size", "128", "--epochs", "1", "--batch-size", "8", "--save-steps", "4", "--out", str(out),
           "--no-progress"]
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "trained on 2 process(es)" in result.stdout
    from forgetless.data.tasks import load_task

    n_train = len(load_task("synthetic", train_size=128).train)
    steps = math.ceil(n_train / (8 * 2))  # two processes share each epoch
    checkpoints = sorted(int(p.name.split("-")[1]) for p in (out / "checkpoints").glob("checkpoint-*"))
    assert checkpoints[-1] == steps
    model, _ = load_model(out / "model")
    assert json.loads((Path(out) / "model" / "forgetless.json").read_text())["metadata"]["world_size"] == 2
    assert model.config.num_labels == 2


def test_checkpoints_of_a_different_run_are_not_resumed(tmp_path, tiny_model_dir):
    task = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16)
    config = TrainConfig(epochs=1, batch_size=8, save_steps=3, progress=False, learning_rate=1e-3)
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    fine_tune(model, tok, task.train, tmp_path / "run", config)
    other = synthetic_shortcut_task(n_train=48, n_dev=16, n_challenge=16, seed=5)  # other data, same folder
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    before = model.classifier.weight.detach().clone()
    trained = fine_tune(model, tok, other.train, tmp_path / "run", config)
    assert not torch.equal(trained.classifier.weight, before)  # it really trained instead of "resuming"
    assert len(list(tmp_path.glob("run.stale-*"))) == 1


def test_checkpoint_cadence_and_logging_are_not_the_run_identity():
    """A rerun with another --save-steps / logging cadence resumes the same run (same weights); a
    changed learning rate is another run."""
    from dataclasses import replace

    from forgetless.config import RunConfig
    from forgetless.data.synthetic import synthetic_shortcut_task
    from forgetless.validate import run_key

    task = synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=0)
    base = RunConfig(model="tiny-bert")
    cadence = replace(base, train=replace(base.train, save_steps=7, checkpoint_minutes=0, logging_steps=3,
                                          report_to="tensorboard"))
    assert base.train.identity() == cadence.train.identity() and run_key(task, base) == run_key(task, cadence)
    other = replace(base, train=replace(base.train, learning_rate=1e-4))
    assert run_key(task, base) != run_key(task, other)


def test_gradient_accumulation_and_bf16_reach_the_trainer(tmp_path, tiny_model_dir):
    """--gradient-accumulation-steps 2 halves the optimiser steps; --bf16 trains in bfloat16 autocast
    on CPU (the weights stay float32)."""
    task = synthetic_shortcut_task(n_train=32, n_dev=8, n_challenge=8)
    config = TrainConfig(epochs=1, batch_size=8, save_steps=1, progress=False, learning_rate=1e-3,
                         gradient_accumulation_steps=2, bf16=True)
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    trained = fine_tune(model, tok, task.train, tmp_path / "acc", config)
    steps = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "acc").glob("checkpoint-*"))
    assert steps[-1] == 2  # 4 batches, one step every 2
    assert all(p.dtype == torch.float32 for p in trained.parameters())


class Tick(TrainerCallback):
    """A fake clock: every optimisation step takes ``seconds`` (no sleeping)."""

    def __init__(self, seconds: float):
        self.seconds, self.time = seconds, 1000.0

    def now(self):
        return self.time

    def on_step_end(self, args, state, control, **kwargs):
        self.time += self.seconds


def test_timed_checkpoint_resumes_bit_identical_and_is_not_the_run_identity(tmp_path, tiny_model_dir, monkeypatch):
    """--checkpoint-minutes 2.5 with 60 s per step: a checkpoint every 3rd step (180 s >= 150 s), none
    from --save-steps; a kill at step 5 resumes from the time-triggered checkpoint-3 to the same
    weights as a straight run; a straight run with another cadence is the same run."""
    from forgetless.training import timing

    task = synthetic_shortcut_task(n_train=80, n_dev=16, n_challenge=16)  # 10 steps of 8
    config = TrainConfig(epochs=1, batch_size=8, save_steps=1000, checkpoint_minutes=2.5, progress=False,
                         learning_rate=1e-3)
    clock = Tick(60.0)
    monkeypatch.setattr(timing, "now", clock.now)
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    straight = fine_tune(model, tok, task.train, tmp_path / "straight", replace(config, checkpoint_minutes=0),
                         callbacks=[clock])
    assert sorted(p.name for p in (tmp_path / "straight").glob("checkpoint-*")) == ["checkpoint-10"]  # epoch end

    model, tok = load_classifier(tiny_model_dir, task.label_names)
    with pytest.raises(KeyboardInterrupt):
        fine_tune(model, tok, task.train, tmp_path / "resumed", config, callbacks=[clock, Crash()])
    assert sorted(p.name for p in (tmp_path / "resumed").glob("checkpoint-*")) == ["checkpoint-3"]
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    resumed = fine_tune(model, tok, task.train, tmp_path / "resumed", config, callbacks=[clock])
    assert not list(tmp_path.glob("resumed.stale-*"))  # same run key with and without timed checkpoints
    steps = sorted(int(p.name.split("-")[1]) for p in (tmp_path / "resumed").glob("checkpoint-*"))
    assert steps == [9, 10]  # 6, 9 by time (save_total_limit 2 keeps the last two), 10 at the epoch end
    for (name, a), (_, b) in zip(straight.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name


class Noise(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == 3:
            transformers.utils.logging.get_logger("transformers.trainer").warning("library noise at step 3")
            logging.getLogger("datasets.builder").warning("library noise at step 3")


def test_overall_estimate_and_quiet_libraries_during_training(tmp_path, tiny_model_dir, monkeypatch, capsys):
    """2 s per step on a fake clock, 12 steps: '~24 s for 12 steps (measured 2 s/step over the first 5
    steps)'; nothing when progress is off. Library log records during training go to train.log as
    JSON lines, not to the terminal; transformers' own bars are off; the training bar is labelled."""
    import re

    from forgetless.training import timing

    task = synthetic_shortcut_task(n_train=96, n_dev=16, n_challenge=16)
    clock = Tick(2.0)
    monkeypatch.setattr(timing, "now", clock.now)
    config = TrainConfig(epochs=1, batch_size=8, save_steps=1000, progress=True, learning_rate=1e-3)
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    before = logging.getLogger("transformers").level
    fine_tune(model, tok, task.train, tmp_path / "run", config, callbacks=[clock, Noise()], resume=False)
    err = capsys.readouterr().err
    lines = re.findall(r"\[forgetless\] fine-tune: ~([\d.]+ (?:s|min)) for (\d+) steps "
                       r"\(measured ([\d.]+) s/step over the first (\d+) steps\)", err)
    assert lines == [("24 s", "12", "2", "5")], err[-2000:]
    assert "[forgetless] run" in err and "Writing model shards" not in err and "library noise" not in err
    rows = [json.loads(line) for line in (tmp_path / "train.log").read_text().splitlines()]
    assert {"run": "run", "library": "transformers.trainer", "level": "WARNING",
            "message": "library noise at step 3"} in rows
    assert {"run": "run", "library": "datasets.builder", "level": "WARNING",
            "message": "library noise at step 3"} in rows
    assert logging.getLogger("transformers").level == before and transformers.utils.logging.is_progress_bar_enabled()
    model, tok = load_classifier(tiny_model_dir, task.label_names)
    fine_tune(model, tok, task.train, tmp_path / "quiet", replace(config, progress=False), callbacks=[clock],
              resume=False)
    assert "fine-tune: ~" not in capsys.readouterr().err
    assert timing.estimate_line(90.0, 100, 5) == ("[forgetless] fine-tune: ~150 min for 100 steps (measured 90 "
                                                  "s/step over the first 5 steps)")
    assert timing.estimate_line(3.0, 40, 5, total=100) == ("[forgetless] fine-tune: ~2.0 min for the remaining 40 "
                                                           "of 100 steps (measured 3 s/step over the first 5 steps)")
