"""The main job end to end on a tiny model, and the bundled MiniLM pruned, saved and reloaded."""
import json
import os
import subprocess
from pathlib import Path
import sys

import pytest
import torch

from forgetless.cli import main
from forgetless.models.io import load_model
from forgetless.report.card_types import Card


def test_compress_truncate_end_to_end(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "run"
    code = main(["compress", "--model", tiny_model_dir, "--method", "truncate", "--layers", "1",
                 "--train-size", "128", "--eval-size", "64", "--epochs", "1", "--lr", "1e-3",
                 "--bench-repeats", "2", "--bench-seq-len", "32", "--out", str(out), "--no-progress",
                 "--clever", "--clever-examples", "4", "--clever-batches", "3", "--clever-samples", "4"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "# forgetless report card: synthetic · truncate" in printed
    card = json.loads((out / "report.json").read_text())
    Card.from_json(card)  # the documented schema (report/card.py), as written to disk
    assert card["schema"] == "forgetless-report-2" and card["kind"] == {"task": "classification", "model": "classifier"}
    assert card["model"]["compressed"] == tiny_model_dir and card["deployment"]["agreement"]["n"] > 0
    assert card["calibration"]["sets"]["dev"]["base"]["n"] == card["sets"]["dev"]["base"]["n"]
    assert set(card["sets"]) == {"dev", "challenge"}
    assert card["sets"]["dev"]["base"]["n"] == len(__import__("forgetless").data.tasks.load_task(
        "synthetic", eval_size=64).dev)
    assert card["params"]["compressed"]["layers"] * 2 == card["params"]["base"]["layers"]
    assert card["speed"]["meaningful"] and card["speed"]["throughput_per_s"]["speedup"] > 0
    assert card["bias"]["gap_base"] is not None and card["hard_easy"]["base"]["n_hard"] > 0
    assert card["seed"] == 0 and card["environment"]["versions"]["torch"] == torch.__version__
    assert (out / "metrics.png").stat().st_size > 1000 and "F_bias" in (out / "report.md").read_text()
    clever = card["robustness"]["clever"]
    assert clever["base"]["examples"] == 4 and clever["compressed"]["params"]["batches"] == 3
    assert clever["base"]["mean"] >= 0 and "per_example" not in clever["base"]
    assert "CLEVER estimates" in (out / "report.md").read_text()
    assert len(json.loads((out / "work" / "clever-compressed.json").read_text())["per_example"]) == 4
    model, tokenizer = load_model(out / "model")
    assert model.config.num_hidden_layers == 1 and tokenizer is not None
    # the teacher is kept in the shared cache (FORGETLESS_CACHE, a tmp folder in tests)
    teacher = Path(card["params"]["base"]["source"]["path"])
    assert teacher.parent == Path(os.environ["FORGETLESS_CACHE"]) / "teachers"
    assert json.loads((teacher / "forgetless.json").read_text())["metadata"]["role"] == "teacher"


def test_compress_magnitude_reports_sparsity_not_speed(tmp_path, tiny_model_dir, capsys):
    out = tmp_path / "run"
    code = main(["compress", "--model", tiny_model_dir, "--method", "magnitude", "--sparsity", "0.5",
                 "--train-size", "96", "--eval-size", "32", "--epochs", "1", "--bench-repeats", "1",
                 "--bench-seq-len", "16", "--out", str(out), "--no-progress"])
    assert code == 0
    card = json.loads((out / "report.json").read_text())
    Card.from_json(card)
    assert card["params"]["compressed"]["prunable_sparsity"] == pytest.approx(0.5, abs=0.01)
    assert card["params"]["compressed"]["total"] == card["params"]["base"]["total"]
    assert not card["speed"]["meaningful"]
    assert "no speedup is expected" in " ".join(card["notes"])
    assert card["speed"] == {"timed": False, "setting": "auto", "runtime": "torch", "meaningful": False,
                             "why_not_timed": "speed not timed: magnitude 50% leaves the dense fp32 computation "
                                              "unchanged (zeros run the same kernels as the base); --speed full times "
                                              "it anyway"}  # --speed auto: zeros are not timed
    assert "Speed not timed: magnitude 50% leaves the dense fp32" in (out / "report.md").read_text()


@pytest.mark.slow
def test_bundled_minilm_pruned_half_reloads_in_fresh_process(tmp_path):
    """The bundled model: remove half the heads and FFN units of every layer, save, reload elsewhere."""
    from forgetless.models import surgery
    from forgetless.models.gates import Gates
    from forgetless.models.io import save_model
    from forgetless.models.loading import load_classifier

    model, tokenizer = load_classifier("minilm", ["a", "b", "c"])
    inputs = tokenizer(["the doctor saw the lawyer", "a longer second sentence for padding"], padding=True,
                       return_tensors="pt")
    heads = {key: list(range(0, 12, 2)) for key in [("encoder", i, "self") for i in range(6)]}
    units = {("encoder", i, "ffn"): list(range(i, 1536, 2)) for i in range(6)}
    with Gates(model) as gates, torch.no_grad():
        for key, keep in heads.items():
            gates.set_head_mask(key, keep)
        for key, keep in units.items():
            gates.set_ffn_mask(key, keep)
        masked = model(**inputs).logits
    surgery.prune_ffn(surgery.prune_heads(model, heads), units)
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).logits, masked, atol=1e-5, rtol=0)
    save_model(model, tmp_path / "m", tokenizer)
    code = ("import json, torch; from forgetless.models.io import load_model\n"
            f"m, t = load_model({str(tmp_path / 'm')!r})\n"
            "x = t(['the doctor saw the lawyer', 'a longer second sentence for padding'], padding=True, "
            "return_tensors='pt')\n"
            "print(json.dumps([m(**x).logits.tolist(), sum(p.numel() for p in m.parameters())]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    logits, n_params = json.loads(out.strip().splitlines()[-1])
    torch.testing.assert_close(torch.tensor(logits), masked, atol=1e-5, rtol=0)
    assert n_params == sum(p.numel() for p in model.parameters()) < 22_713_987 - 5_000_000
