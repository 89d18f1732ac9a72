"""The honest card wired into the pipeline: predictions.jsonl, intervals, warnings, model card,
shared teacher cache, checkpoint clean-up, export CLI; and the warning / verdict logic on fixtures."""
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from huggingface_hub import ModelCard

from forgetless.cli import main
from forgetless.data.tasks import load_task
from forgetless.report import honest
from forgetless.report.markdown import _verdict, render_markdown
from forgetless.report.predictions import read_predictions, recompute_accuracy
from forgetless.report.card_types import Interval
from typed_cards import typed_card

torch.set_num_threads(1)
RUN = ["--method", "heads", "--prune-count", "2", "--scoring-examples", "16", "--train-size", "64",
       "--eval-size", "4", "--epochs", "1", "--lr", "1e-3", "--bench-repeats", "2", "--bench-seq-len", "16",
       "--bench-batch-size", "4", "--no-progress"]


@pytest.fixture(scope="module")
def run_a(tmp_path_factory, tiny_model_dir):
    out = tmp_path_factory.mktemp("honest") / "A"
    assert main(["compress", "--model", tiny_model_dir, *RUN, "--out", str(out)]) == 0
    return out


def test_card_with_empty_hard_subset_predictions_intervals_and_model_card(run_a, tiny_model_dir):
    card = json.loads((run_a / "report.json").read_text())
    # eval size 4: the synthetic dev set has no hard example; every field copes with n = 0
    assert card["hard_easy"]["base"]["n_hard"] == 0 and card["intervals"]["hard_easy"]["base"]["hard"] == \
        {"accuracy": None, "low": None, "high": None, "n": 0}
    assert card["intervals"]["n_resamples"] == 1000 and card["intervals"]["seed"] == 0
    rows = read_predictions(run_a / card["predictions"])
    assert len(rows) == 2 * sum(entry["base"]["n"] for entry in card["sets"].values())
    for name, entry in card["sets"].items():
        for role in ("base", "compressed"):
            again = recompute_accuracy(rows, name, role)
            assert again["accuracy"] == pytest.approx(entry[role]["accuracy"]) and again["n"] == entry[role]["n"]
            interval = card["intervals"]["sets"][name][role]
            assert interval["low"] <= interval["accuracy"] <= interval["high"]
            assert interval["accuracy"] == pytest.approx(entry[role]["accuracy"])
    assert all(len(r["probabilities"]) == 2 for r in rows)
    assert all(r["text"] and r["text_pair"] for r in rows)  # the input travels with each prediction (pair task)
    timing = card["speed"]["timing"]["throughput"]
    assert timing["base"]["n"] == 2 and len(card["speed"]["times_s"]["throughput"]["compressed"]) == 2
    assert timing["speedup"]["low"] <= timing["speedup"]["high"]
    assert card["training"]["fine_tunes"] == [{"name": "train-heads", "epochs": 1.0}]
    assert card["training"]["compressed_epochs"] == 2.0 and card["training"]["base_epochs"] == 1.0
    text = (run_a / "report.md").read_text()
    assert ("## ⚠ Warnings" in text) == bool(card["warnings"]) and "## Training" in text
    page = (run_a / "report.html").read_text()  # one self-contained file: every plot embedded
    assert page.count('src="data:image/png;base64,') == len(card["plots"]) >= 2 and "<table>" in page
    # the model folder carries a Hugging Face model card with the headline table and the warnings
    model_card = ModelCard.load(run_a / "model" / "README.md")
    assert model_card.data.to_dict()["tags"][:2] == ["forgetless", "model-compression"]
    assert model_card.text.lstrip().startswith("# " + Path(tiny_model_dir).name + "-heads-synthetic")
    assert "## Results" in model_card.text and "| dev | accuracy | 4 |" in model_card.text
    assert all(w in model_card.text for w in card["warnings"])
    # checkpoints are gone, the log file is there, and nothing was printed but the card
    assert not list((run_a / "work").rglob("checkpoint-*"))
    assert "train_loss" in (run_a / "work" / "train.log").read_text()


def test_second_output_folder_reuses_the_cached_teacher(run_a, tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "B"
    capsys.readouterr()
    assert main(["compress", "--model", tiny_model_dir, *RUN, "--out", str(out), "--keep-work"]) == 0
    captured = capsys.readouterr()
    card_a = json.loads((run_a / "report.json").read_text())
    card_b = json.loads((out / "report.json").read_text())
    assert card_b["params"]["base"]["source"]["reused"] is True
    assert card_b["params"]["base"]["source"]["path"] == card_a["params"]["base"]["source"]["path"]
    assert "reusing teacher from" in captured.err
    assert not (out / "work" / "train-teacher").exists()  # not retrained
    assert list((out / "work").rglob("checkpoint-*"))  # --keep-work
    assert "'train_loss'" not in captured.out and captured.out.startswith("# forgetless report card")  # no Trainer logs
    assert card_b["sets"]["dev"]["base"] == card_a["sets"]["dev"]["base"]


def test_export_cli_round_trip_of_head_pruned_model(run_a, tmp_path, capsys):
    import onnxruntime  # noqa: F401

    from forgetless.export import ort_session
    from forgetless.models.io import load_model

    capsys.readouterr()
    assert main(["export", str(run_a / "model"), "--format", "onnx", "--out", str(tmp_path / "onnx")]) == 0
    printed = capsys.readouterr().out
    assert "verified with onnxruntime" in printed and "max |diff| model" in printed
    model, tokenizer = load_model(run_a / "model")
    assert sum(len(l.attention.self.query.weight) for l in model.bert.encoder.layer) < 2 * 32  # heads removed
    inputs = tokenizer(["a short one", "the doctor saw the lawyer today"], padding=True, return_tensors="np")
    session = ort_session(tmp_path / "onnx" / "model.onnx")
    names = [i.name for i in session.get_inputs()]
    onnx_logits = session.run(None, {n: inputs[n].astype(np.int64) for n in names})[0]
    with torch.no_grad():
        torch_logits = model(**{n: torch.tensor(inputs[n]) for n in names}).logits.numpy()
    assert np.abs(onnx_logits - torch_logits).max() < 1e-4


def test_export_cli_errors_exit_2(run_a, monkeypatch, capsys):
    assert main(["export", str(run_a / "model")]) == 2
    assert main(["compress", "--report-to", "tensorbored", "--out", str(run_a.parent / "never")]) == 2
    assert "--report-to 'tensorbored': unknown" in capsys.readouterr().err
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["export", str(run_a / "model"), "--push-to-hub", "me/model"]) == 2
    assert "HF_HUB_OFFLINE" in capsys.readouterr().err


# ----- fixtures without a model -----------------------------------------------------------------
def _predictions(task, base, compressed):
    """``{role: {set: {"predicted": ids}}}`` from functions of the gold labels."""
    return {role: {name: {"predicted": [fn(y, i) for i, y in enumerate(examples.labels)]}
                   for name, examples in task.eval_sets().items()}
            for role, fn in (("base", base), ("compressed", compressed))}


def _results(task, predictions):
    from forgetless.metrics.accuracy import pooled_task_accuracy, set_metrics

    out = {}
    for role, sets in predictions.items():
        metrics = {name: set_metrics(ex, np.array(sets[name]["predicted"])) for name, ex in task.eval_sets().items()}
        out[role] = {"sets": metrics, **pooled_task_accuracy(task, metrics)}
    return out


@pytest.fixture(scope="module")
def task():
    return load_task("synthetic", eval_size=200)


def test_single_class_and_chance_level_fixture_warns(task):
    predictions = _predictions(task, lambda y, i: 0, lambda y, i: 0)
    results = _results(task, predictions)
    warnings = honest.collect(task, results, predictions, None, None)
    assert any("predicts 'entailment' for 100.0%" in w for w in warnings)
    assert "base model on dev: accuracy 0.465 is at most 0.05 above chance (0.500 for 2 classes): 0.035 below it; its " \
           "gaps and F_bias are not meaningful" in warnings  # 93 of 200 dev labels are 0


def test_healthy_fixture_has_no_warning_and_meaningful_f_bias(task):
    # both right on every dev example; on the challenge set base wrong on every 5th, compressed every 4th
    dev = lambda y, i: y  # noqa: E731
    predictions = _predictions(task, dev, dev)
    for role, every in (("base", 5), ("compressed", 4)):
        labels = task.eval_sets()["challenge"].labels
        predictions[role]["challenge"]["predicted"] = [1 - y if i % every == 0 else y for i, y in enumerate(labels)]
    results = _results(task, predictions)
    from forgetless.report.card import bias_section

    bias = bias_section(results)
    assert honest.collect(task, results, predictions, bias, None) == []
    assert honest.f_bias_meaningful(bias, [])
    section = honest.intervals_section(task, predictions, seed=3, n_resamples=200)
    fb = section.f_bias
    assert fb["low"] <= fb["f_bias"] <= fb["high"] and fb["n_resamples"] == 200
    assert section.sets["dev"]["base"] == Interval(accuracy=1.0, low=1.0, high=1.0, n=200)


def test_more_training_warns_only_when_compressed_beats_base(task):
    base = lambda y, i: y if i % 3 else 1 - y  # noqa: E731
    predictions = _predictions(task, base, lambda y, i: y)
    results = _results(task, predictions)
    training = honest.training_section(2.0, "teacher", [{"name": "train-heads", "epochs": 1.0}])
    assert training["compressed_epochs"] == 3.0
    assert any("trained for 3 epochs" in w for w in honest.collect(task, results, predictions, None, training))
    swapped = {"base": predictions["compressed"], "compressed": predictions["base"]}
    assert not any("epochs" in w for w in honest.collect(task, _results(task, swapped), swapped, None, training))


def _verdict_card(low, high, f_bias_meaningful=True):
    return {"params": {"ratio": 0.5, "nonzero_ratio": 0.5}, "method": {"structured": True},
            "headline": {"kept": 0.99, "metric": "accuracy"}, "warnings": [],
            "bias": {"f_bias": 1.2, "meaningful": f_bias_meaningful},
            "speed": {"meaningful": True, "mode": "forward", "throughput_per_s": {"speedup": 1.1},
                      "timing": {"throughput": {"speedup": {"speedup": 1.1, "low": low, "high": high,
                                                            "measurable": low > 1 or high < 1}}}}}


def test_verdict_says_no_measurable_speedup_and_not_meaningful():
    assert "no measurable speedup (throughput 1.10× [0.90, 1.30] not measurable)" in _verdict(typed_card(_verdict_card(0.9, 1.3)))
    assert "throughput speedup 1.10× [1.05, 1.20]" in _verdict(typed_card(_verdict_card(1.05, 1.2)))
    assert "not meaningful" in _verdict(typed_card(_verdict_card(1.05, 1.2, f_bias_meaningful=False)))
    assert render_markdown  # the full rendering is checked on the pipeline card above


def test_near_constant_generation_warns_and_rows_keep_texts():
    task = load_task("synthetic-lookup", eval_size=20)
    sets = task.eval_sets()
    varied = {name: {"generated": [f"answer {i}" for i in range(len(ex))]} for name, ex in sets.items()}
    constant = {name: {"generated": ["the same"] * len(ex)} for name, ex in sets.items()}
    predictions = {"base": varied, "compressed": constant}
    warnings = honest.collect(task, None, predictions, None, None)
    assert warnings and all(w.startswith("compressed model on") and "near-constant" in w for w in warnings)
    rows = honest.prediction_rows(task, predictions)
    assert rows[0]["predicted"] == "answer 0" and rows[0]["gold"] == list(sets["dev"].references[0])


def test_decode_interval_by_hand():
    """Per-token decode speedup = (generate − prefill) of the base over the compressed model's; a
    resample where generating is no slower than the prefill has no ratio: unbounded, not measurable."""
    prefill = {"base": [1.0, 1.0, 1.0], "compressed": [0.5, 0.5, 0.5]}
    generate = {"base": [3.0, 3.0, 3.0], "compressed": [1.5, 1.5, 1.5]}  # steps 2.0 and 1.0
    result = honest.decode_interval(prefill, generate, n_resamples=200)
    assert result == {"speedup": 2.0, "low": 2.0, "high": 2.0, "unbounded": False, "measurable": True,
                      "n_resamples": 200}
    noisy = honest.decode_interval(prefill, {"base": [3.0, 3.0, 3.0], "compressed": [0.4, 1.5, 1.5]}, n_resamples=200)
    assert noisy["unbounded"] and not noisy["measurable"] and noisy["speedup"] == 2.0
    card = {"speed": {"times_s": {"prefill latency": prefill, "generate latency": generate}}}
    assert honest.timing_section(card["speed"], n_resamples=50)["decode latency"]["speedup"]["speedup"] == 2.0
