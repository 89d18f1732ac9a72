"""The LLM user's path (issue 42) on a tiny Llama: ``forgetless.evaluate`` of a saved compressed model on
an LLM suite gives the numbers of ``forgetless compress``'s card for the same items; calibration text
that is evaluated is warned about; a GPTQ card and compare page describe a quantized model (size on
disk, bits per weight, no sparsity, no classifier columns, no empty Pareto panel); the run says what it
does in the words of the LLM path."""
import json
import re

import pytest

import forgetless
from forgetless.cli import main
from forgetless.errors import ForgetlessError
from forgetless.report.headline import headline_numbers
from forgetless.report.card_types import Card
from forgetless.report.pareto import panels

from llm_data import write_llm_data

pytest.importorskip("lm_eval")
TASKS = "arc_easy_offline,piqa_offline,winogrande_offline"
COMMON = ["--base", "as-is", "--eval-size", "3", "--task", "lm-eval", "--lm-eval-tasks", TASKS,
          "--calibration-examples", "4", "--calibration-batch", "2"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A SparseGPT run calibrated on WikiText-2 test (which the suite scores) and a GPTQ run; stderr of the first."""
    from forgetless.models.loading import load_causal_lm

    root = tmp_path_factory.mktemp("llm-user")
    data = write_llm_data(root / "data")
    model, tokenizer = load_causal_lm("tiny-llama")  # a folder: its size on disk is the base's
    model.save_pretrained(root / "llama")
    tokenizer.save_pretrained(root / "llama")
    out = {"data": data, "sparsegpt": root / "sparsegpt", "gptq": root / "gptq", "base": str(root / "llama")}
    capture = pytest.MonkeyPatch()
    import io
    import sys
    err = io.StringIO()
    capture.setattr(sys, "stderr", err)
    try:
        assert main(["compress", *COMMON, "--model", out["base"], "--data-dir", str(data), "--method", "sparsegpt",
                     "--recovery", "none",
                     "--calibration-data", "wikitext2", "--out", str(out["sparsegpt"])]) == 0
    finally:
        capture.undo()
    out["stderr"] = err.getvalue()
    assert main(["compress", *COMMON, "--model", out["base"], "--data-dir", str(data), "--method", "gptq",
                 "--group-size", "16",
                 "--out", str(out["gptq"]), "--no-progress"]) == 0
    return out


def test_evaluate_gives_the_cards_numbers_for_the_same_items(runs, monkeypatch, tmp_path):
    """A fresh evaluation (another cache) of the saved folder against the same base: the card's llm
    section, perplexity and warnings, number for number."""
    card = json.loads((runs["sparsegpt"] / "report.json").read_text())
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "fresh-cache"))
    compared = forgetless.evaluate(str(runs["sparsegpt"] / "model"), "lm-eval", base=runs["base"], lm_eval_tasks=TASKS,
                                   eval_size=3, data_dir=runs["data"], calibration="wikitext2")
    compared = json.loads(json.dumps(compared.to_dict()))
    assert not any(entry["reused"] for entry in compared["llm"]["engine"]["cache"].values() if entry)
    for key in ("tasks", "headline_tasks", "headline", "pooled", "pairs", "kl_basis"):
        assert compared["llm"][key] == card["llm"][key], key
    assert compared["language_model"] == card["language_model"] and compared["sets"] == card["sets"]
    assert compared["warnings"] == card["warnings"] and any(w.startswith("calibration: ") for w in card["warnings"])
    assert set(compared["params"]) == {"base", "compressed"}
    single = forgetless.evaluate(str(runs["sparsegpt"] / "model"), "lm-eval", lm_eval_tasks=TASKS.split(","),
                                 eval_size=3, data_dir=runs["data"])
    assert single.to_dict()["sets"] == json.loads(json.dumps({k: v["compressed"] for k, v in card["sets"].items()}))
    with pytest.raises(ForgetlessError, match="lm_eval_tasks: options of a task given by name"):
        forgetless.evaluate(str(runs["sparsegpt"] / "model"), {}, lm_eval_tasks=TASKS)


def test_calibration_on_evaluated_text_is_a_warning_and_disjoint_text_is_not(runs):
    from forgetless.report.trust import calibration_leak

    warning = json.loads((runs["sparsegpt"] / "report.json").read_text())["warnings"][-1]
    assert re.match(r"calibration: \d+ of the \d+ calibration texts \(of 40\+ characters\) are in wikitext2 \(.*"
                    r"wiki\.test\.raw\), which this card evaluates", warning), warning
    assert "calibration:" not in " ".join(json.loads((runs["gptq"] / "report.json").read_text())["warnings"])
    text = "a sentence long enough to count as calibration text, really"
    assert calibration_leak([text, "short"], {"x": f"…{text}…"}) is not None
    assert calibration_leak([text] + [f"another long calibration sentence number {i}" for i in range(10)],
                            {"x": text}) is None  # 1 of 11 < a tenth


def test_the_run_speaks_the_words_of_the_llm_path(runs):
    err = runs["stderr"]
    assert "[forgetless] [1/4] base" in err and "] teacher" not in err and "objective ce" not in err
    assert "[forgetless] base: lm-eval on 3 task(s), then wikitext2 perplexity" in err
    assert "[forgetless] compressed: lm-eval on 3 task(s), then wikitext2 perplexity" in err


def test_a_gptq_card_and_compare_page_describe_a_quantized_model(runs, tmp_path):
    card = json.loads((runs["gptq"] / "report.json").read_text())
    text = (runs["gptq"] / "report.md").read_text()
    size = text.split("## Size")[1].split("\n## ")[0]
    assert "non-zero" not in size and "sparsity |" not in size and "bits per weight in the 28 quantized layers" in size
    assert "The zeros of a quantization grid" in size and headline_numbers(Card.from_json(card))["size"]["sparsity"] is None
    assert main(["compare", str(runs["gptq"]), str(runs["sparsegpt"]), "--out", str(tmp_path / "cmp")]) == 0
    page = (tmp_path / "cmp" / "compare.md").read_text()
    assert "F_bias" not in page and "| hard |" not in page and "challenge" not in page.split("## LLM tasks")[0]
    head = page.split("\n\n| base model of")[0]  # the first table: one row per run
    rows = {line.split(" | ")[0][2:]: line.split(" | ") for line in head.splitlines() if line.startswith("| ")}
    disk = card["params"]["compressed"]["disk_bytes"] / card["params"]["base"]["disk_bytes"]
    assert rows["gptq"][3:5] == [f"{disk:.2f}×", "–"] and rows["sparsegpt"][4] == "50.0%"
    numbers = [{"label": n, "group": n, "numbers": headline_numbers(Card.from_json(json.loads((runs[n] / "report.json").read_text())))}
               for n in ("gptq", "sparsegpt")]
    assert panels(numbers) == [("dev", "params")]  # no challenge set, no speed timed: one panel, not four


def test_what_needs_no_model_is_checked_before_any_data_or_model(runs, monkeypatch, capsys, tmp_path):
    """GPTQ's group size against the model's widths (config.json) and an lm-eval task only the hub has,
    with the hub off: one line each (exit code 2) before the task's data is read or a model loaded."""
    from types import SimpleNamespace

    from forgetless.llm import engine

    def refuse(*args, **kwargs):
        raise AssertionError("data or a model was read")

    monkeypatch.setattr("forgetless.cli.jobs.task_from_config", refuse)
    monkeypatch.setattr("forgetless.kinds.causal_lm.load_causal_lm", refuse)
    assert main(["compress", "--model", runs["base"], "--base", "as-is", "--method", "gptq", "--task", "lm-eval",
                 "--lm-eval-tasks", "piqa_offline", "--data-dir", str(runs["data"]), "--out", str(tmp_path / "x")]) == 2
    assert "--group-size 128: model" in capsys.readouterr().err
    own = engine.task_manager  # lm-eval's own index stands in: hellaswag reads Rowan/hellaswag from the hub
    hub = SimpleNamespace(task_index={"hellaswag": SimpleNamespace(cfg={"dataset_path": "Rowan/hellaswag"})})
    monkeypatch.setattr(engine, "task_manager", lambda include, root, defaults, *a: hub if defaults else
                        own(include, root, defaults))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["compress", "--model", runs["base"], "--base", "as-is", "--method", "gptq", "--group-size", "16",
                 "--task", "lm-eval", "--lm-eval-tasks", "hellaswag,piqa_offline", "--data-dir", str(runs["data"]),
                 "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip() == (
        "forgetless: error: --lm-eval-tasks hellaswag: lm-eval's own task reads the hub dataset Rowan/hellaswag, and the "
        "hub is off (HF_HUB_OFFLINE=1) with no copy in datasets' cache; use hellaswag_offline (the shipped offline "
        "copy; with --data-dir DIR)")


def test_the_evaluate_command_prints_the_cards_numbers_of_a_saved_llm(runs, capsys):
    """``forgetless evaluate FOLDER`` (the folder positional, as the README says) on the LLM suite: each
    task's own metric and the perplexity with the tokens it scored, as on the card."""
    card = json.loads((runs["gptq"] / "report.json").read_text())
    assert main(["evaluate", str(runs["gptq"] / "model"), "--task", "lm-eval", "--lm-eval-tasks", TASKS,
                 "--data-dir", str(runs["data"]), "--eval-size", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    for name, entry in card["sets"].items():
        metrics = entry["compressed"]
        if "accuracy" in metrics:
            assert f"{name:>12}: {metrics['metric']} {100 * metrics['accuracy']:.2f}% (n=3)" in out
    lm = card["language_model"]["compressed"]
    assert f"  perplexity: {lm['perplexity']:.2f} on wiki.test.raw ({lm['scored']:,} tokens scored in " \
           f"{lm['windows']} windows of {lm['window']})" in out
