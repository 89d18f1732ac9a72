"""Sweep over objectives × seeds × sparsities on a tiny BERT: tables, aggregation, plots, resume."""
import json

import pytest

from forgetless.data.synthetic import synthetic_shortcut_task
from forgetless.errors import ConfigError
from forgetless.sweep import aggregate, render_markdown, run_sweep, table
from forgetless.config import SpeedConfig, SweepConfig, TrainConfig
from forgetless.report.card_types import Card
from typed_cards import typed_card
from tiny_bert import tiny_bert, tiny_tokenizer


def _record(objective, seed, dev, challenge, f_bias, hard=None, easy=None):
    base = {"dev": 0.9, "challenge": 0.6, "f_bias": 1.0, "hard": 0.5, "easy": 0.95, "groups": {"c/x/entailment": 1.0}}
    return {"objective": objective, "level": 0.4, "seed": seed, "base": base,
            "compressed": {"dev": dev, "challenge": challenge, "f_bias": f_bias, "hard": hard, "easy": easy,
                           "groups": {"c/x/entailment": dev}}}


SPEED = SpeedConfig(batch_size=8, seq_len=32, warmup=1, repeats=2)


def test_aggregate_mean_and_sample_std():
    summary = aggregate([_record("ce", 0, 0.8, 0.5, 1.2, 0.4, 0.9), _record("ce", 1, 0.6, 0.7, 1.4, 0.2, 0.7),
                         _record("rmc", 0, 0.7, 0.6, None)])
    ce, rmc = summary["rows"]
    assert ce["dev"]["mean"] == pytest.approx(0.7) and ce["dev"]["std"] == pytest.approx(0.1414214, abs=1e-6)
    assert ce["f_bias"]["mean"] == pytest.approx(1.3) and ce["hard"]["mean"] == pytest.approx(0.3)
    assert rmc["f_bias"]["n"] == 0 and rmc["dev"]["std"] == 0.0
    assert summary["base"]["dev"]["mean"] == pytest.approx(0.9)
    assert ce["groups"]["c/x/entailment"]["mean"] == pytest.approx(0.7)


def test_sweep_end_to_end_and_resume(tmp_path):
    tokenizer = tiny_tokenizer()
    model_dir = tmp_path / "tiny"
    tiny_bert(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    task = synthetic_shortcut_task(n_train=64, n_dev=32, n_challenge=32, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    sweep = SweepConfig(objectives=["ce", "rmc"], seeds=[0, 1], levels=["0.5"], model=str(model_dir), train=train,
                        objective_options={"sparsities": "0.2,0.5", "recovery_epochs": 0}, progress=False, speed=SPEED)
    summary = run_sweep(task, sweep, tmp_path / "sweep")
    assert [(r["objective"], r["level"]) for r in summary["rows"]] == [("ce", 0.5), ("rmc", 0.5)]
    assert all(r["dev"]["n"] == 2 for r in summary["rows"])
    assert set(summary["difficulty"]) == {"0", "1"} and summary["difficulty"]["0"]["agreement"]["n"] == 64
    out = tmp_path / "sweep"
    assert json.loads((out / "sweep.json").read_text())["schema"] == "forgetless-sweep-2"
    text = (out / "sweep.md").read_text()
    assert "| rmc | 0.5 |" in text and "agreement" in text
    for name in ("accuracy_vs_sparsity.png", "f_bias_per_objective.png", "hard_easy_per_objective.png"):
        assert (out / name).stat().st_size > 1000
    assert not (out / "runs" / "ce-s0.5-seed0" / "work").exists()  # checkpoints removed, model kept
    assert (out / "runs" / "ce-s0.5-seed0" / "model").is_dir()
    assert not list((out / "teachers").rglob("checkpoint-*"))  # the teachers' checkpoints too (issue 18)
    stamp = (out / "runs" / "ce-s0.5-seed0" / "report.json").stat().st_mtime_ns
    again = run_sweep(task, sweep, tmp_path / "sweep")  # every run reused
    assert (out / "runs" / "ce-s0.5-seed0" / "report.json").stat().st_mtime_ns == stamp
    assert again["rows"][0]["dev"] == summary["rows"][0]["dev"]
    assert render_markdown(again) == text
    cards = sorted((json.loads(p.read_text()) for p in (out / "runs").glob("*/report.json")),
                   key=lambda c: (c["seed"], ["ce", "rmc"].index(c["method"]["objective"])))
    collected = table._summary([table._record(Card.from_json(c)) for c in cards], summary["task"], summary["setup"], {}, None)
    assert [r["dev"] for r in collected["rows"]] == [r["dev"] for r in summary["rows"]]  # from the run folders alone


def test_teacher_seed_trains_one_teacher_for_every_seed(tmp_path):
    import yaml

    tokenizer = tiny_tokenizer()
    model_dir = tmp_path / "tiny"
    tiny_bert(tokenizer).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    task = synthetic_shortcut_task(n_train=32, n_dev=16, n_challenge=16, hard_fraction=0.25, seed=0)
    train = TrainConfig(epochs=1, batch_size=16, max_length=32, save_steps=10 ** 6, progress=False)
    out = tmp_path / "sweep"
    sweep = SweepConfig(objectives=["ce"], seeds=[0, 1], levels=["0.5"], model=str(model_dir), train=train,
                        teacher_seed=0, progress=False, speed=SPEED)
    summary = run_sweep(task, sweep, out, meta={"name": "t"}, plots=False)
    assert yaml.safe_load((out / "recipe.yaml").read_text())["teacher_seed"] == 0
    assert summary["setup"]["teacher_seed"] == 0 and summary["rows"][0]["seeds"] == [0, 1]
    assert "one teacher (seed 0) shared by every seed" in (out / "sweep.md").read_text()
    assert [p.name.split("-")[-1] for p in (out / "teachers").iterdir()] == ["seed0"]  # one teacher
    runs = [yaml.safe_load((out / "runs" / f"ce-s0.5-seed{s}" / "model" / "recipe.yaml").read_text()) for s in (0, 1)]
    assert runs[0]["teacher"] == runs[1]["teacher"] and [r["seed"] for r in runs] == [0, 1]
    assert "teacher_seed" not in runs[0] and "objectives" not in runs[0]  # a run's recipe names its teacher instead


def test_plots_for_several_sparsities(tmp_path):
    from forgetless.report.rmc_plots import sweep_plots

    records = []
    for sparsity in (0.2, 0.5):
        for objective in ("ce", "rmc"):
            for seed in (0, 1):
                r = _record(objective, seed, 0.8 - sparsity / 4 + seed / 50, 0.55, 1.1 + seed / 10, 0.4, 0.9)
                r["level"] = sparsity
                records.append(r)
    summary = aggregate(records)
    summary.update({"task": {"name": "toy"}, "setup": {"method": "magnitude", "level_option": "sparsity"}})
    paths = sweep_plots(summary, tmp_path)
    assert [p.name for p in paths] == ["accuracy_vs_sparsity.png", "f_bias_per_objective.png",
                                       "hard_easy_per_objective.png", "figure1_hard_easy_vs_sparsity.png"]
    assert all(p.stat().st_size > 1000 for p in paths)


def test_sweep_rejects_unknown_objective(tmp_path):
    task = synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=0)
    with pytest.raises(ConfigError, match="unknown objective 'nope'"):
        run_sweep(task, SweepConfig(objectives=["ce", "nope"]), tmp_path)
    with pytest.raises(ConfigError, match="unknown option.*alpha"):
        run_sweep(task, SweepConfig(objectives=["ce"], objective_options={"alpha": 0.3}), tmp_path)
    with pytest.raises(ConfigError, match="level_option=ratio: not an option of method 'magnitude'"):
        run_sweep(task, SweepConfig(objectives=["ce"], level_option="ratio"), tmp_path)


def test_task_fingerprint_depends_on_task_content():
    from forgetless.sweep.runner import task_fingerprint

    a = synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=0)
    b = synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=1)
    assert task_fingerprint(a) == task_fingerprint(synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=0))
    assert task_fingerprint(a) != task_fingerprint(b)


def test_cli_sweep_passes_objective_options_and_saves_recipes(tmp_path):
    """`forgetless sweep` and `forgetless run` share one path: an objective option given on the
    command line reaches that objective, and the sweep and each run save their recipes."""
    from forgetless.cli import main
    from forgetless.recipes import load_recipe

    out = tmp_path / "sw"
    assert main(["sweep", "--model", "tiny-bert", "--objectives", "focal", "--objective-gamma", "1.5", "--levels", "0.5",
                 "--train-size", "12", "--eval-size", "6", "--epochs", "1", "--batch-size", "4", "--max-length", "32",
                 "--bench-repeats", "1", "--bench-batch-size", "2", "--bench-seq-len", "8", "--no-progress",
                 "--out", str(out)]) == 0
    assert load_recipe(out / "recipe.yaml")["config"].objective_options == {"gamma": 1.5}
    run = json.loads((out / "runs" / "focal-s0.5-seed0" / "forgetless-run.json").read_text())
    assert run["config"]["objective"]["gamma"] == 1.5
    assert load_recipe(out / "runs" / "focal-s0.5-seed0" / "model" / "recipe.yaml")["config"].objective.gamma == 1.5


def test_finished_run_is_reused_across_progress_and_cadence_and_rerun_with_a_line_when_settings_change(tmp_path, capsys):
    """A sweep reuses a finished run whose folder holds the run's key (``validate.run_key``, the one run
    identity: settings and data): progress bars and checkpoint cadence do not make it stale; a changed
    setting or other data reruns it and says which settings changed."""
    from dataclasses import replace

    from forgetless.config import RunConfig
    from forgetless.outputs import RUN_FILE
    from forgetless.sweep.runner import _reuse
    from forgetless.validate import run_identity, run_key

    task = synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=0)
    other_data = synthetic_shortcut_task(n_train=16, n_dev=8, n_challenge=8, seed=1)
    config = RunConfig()
    run_dir = tmp_path / "ce-s0.5-seed0"
    run_dir.mkdir()
    (run_dir / "report.json").write_text(json.dumps(typed_card({}).to_json()))
    (run_dir / RUN_FILE).write_text(json.dumps({"command": "compress", "key": run_key(task, config),
                                                "config": run_identity(config)}))
    assert _reuse(run_dir, config, task) is None  # not finished: no sweep-run.json yet
    (run_dir / "sweep-run.json").write_text(json.dumps({"key": run_key(task, config), "seconds": 1.0}))

    quiet = replace(config, progress=not config.progress, train=replace(config.train, save_steps=7, logging_steps=3))
    assert _reuse(run_dir, quiet, task)[1] == 1.0  # the card and the seconds of its run
    assert capsys.readouterr().err == ""

    other = replace(config, train=replace(config.train, learning_rate=1e-3, epochs=2.0))
    assert _reuse(run_dir, other, task) is None
    assert capsys.readouterr().err.strip() == ("[forgetless] ce-s0.5-seed0 finished with other settings "
                                               "(train.epochs, train.learning_rate); running it again")
    assert _reuse(run_dir, config, other_data) is None
    assert "(the same settings, other data)" in capsys.readouterr().err
