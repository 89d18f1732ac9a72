"""An LLM suite end to end on a tiny random Llama: `forgetless compress --task llm-zero-shot` writes a
card whose llm section pairs the two models on the same items (flips, KL, thirds, perplexity with its
window), predictions.jsonl gives back every accuracy, `forgetless report` re-renders it and `forgetless
compare` puts two runs side by side with its LLM table and plot; `--task lm-eval` takes a user's YAML."""
import json

import pytest

from forgetless.cli import main
from forgetless.report.card_types import Card
from forgetless.report.predictions import read_predictions, recompute_accuracy

from llm_data import write_llm_data

pytest.importorskip("lm_eval")
COMMON = ["--model", "tiny-llama", "--base", "as-is", "--recovery", "none", "--eval-size", "3", "--bench-repeats", "1",
          "--bench-seq-len", "16", "--bench-new-tokens", "2", "--no-progress"]


def test_cli_llm_zero_shot_card_pages_report_and_compare(tmp_path):
    data = write_llm_data(tmp_path / "data")
    first, second = tmp_path / "sparsegpt", tmp_path / "magnitude"
    assert main(["compress", "--task", "llm-zero-shot", "--data-dir", str(data), "--method", "sparsegpt",
                 "--calibration-examples", "4", "--calibration-batch", "2", "--out", str(first), *COMMON]) == 0
    assert main(["compress", "--task", "llm-zero-shot", "--data-dir", str(data), "--method", "magnitude",
                 "--sparsity", "0.3", "--until-interval", "150", "--out", str(second), *COMMON]) == 0
    card = json.loads((first / "report.json").read_text())
    Card.from_json(card)
    assert card["kind"] == {"task": "lm-eval", "model": "causal-lm"}
    llm = card["llm"]
    assert llm["engine"]["chat_template"] is False and llm["engine"]["shots"] == 0
    assert set(llm["tasks"]) == {"arc_easy_offline", "arc_challenge_offline", "hellaswag_offline", "piqa_offline",
                                 "winogrande_offline", "openbookqa_offline"}  # lm-eval's wikitext: opt-in
    rows = read_predictions(first / "predictions.jsonl")
    for name, task in llm["tasks"].items():
        ids = {role: [r["id"] for r in rows if r["set"] == name and r["role"] == role] for role in ("base", "compressed")}
        assert ids["base"] == ids["compressed"] and len(ids["base"]) == task["n"] == min(3, task["size"])
        if task["output_type"] != "multiple_choice":
            assert task["word_perplexity"]["base"] > 1
            continue
        picked = [r for r in rows if r["set"] == name]  # probabilities of the metric's scores: the pick is the argmax
        assert all(r["probabilities"].index(max(r["probabilities"])) == r["predicted"] for r in picked), name
        f = task["flips"]
        assert f["n"] == task["n"] and f["correct_to_wrong"] + f["wrong_to_correct"] <= f["n"]
        assert sum(part["n"] for part in task["hard_easy"].values()) == task["n"]
        for role in ("base", "compressed"):  # the rows give back the card's numbers
            again = recompute_accuracy(rows, name, role)
            assert again["n"] == task["n"] and again["accuracy"] == pytest.approx(task[task["metric"]][role]["value"])
    lm = card["language_model"]
    # the fixture's WikiText is shorter than tiny-llama's 512-token context: one window of all its tokens
    assert lm["base"]["window"] == lm["base"]["tokens"] < 512 and lm["base"]["windows"] == 1
    memory = card["environment"]
    assert memory["run_memory"]["peak_rss_mib"] >= memory["compress_memory"]["peak_rss_mib"] > 50
    assert llm["scoring"]["path"] == "shared-context" and llm["scoring"]["tolerance_nats_per_token"] == 5e-5
    assert set(llm["scoring"]["near_ties"]) == set(llm["tasks"]) and "stopping" not in llm
    stopped = json.loads((second / "report.json").read_text())["llm"]
    assert stopped["stopping"]["items_per_task"] == stopped["stopping"]["population_per_task"] == 3
    assert all(t["n"] == 3 for t in stopped["tasks"].values()) and stopped["stopping"]["exhausted"]
    if stopped["headline"]:  # the headline's interval is the confidence sequence's, not a bootstrap's
        assert stopped["headline"]["delta"]["low"] == stopped["stopping"]["interval"]["low"]
    assert "Stopped by --until-interval 150" in (second / "report.md").read_text()
    markdown = (first / "report.md").read_text()
    assert "Log-likelihoods: forgetless's shared-context scoring" in markdown and "the run's peak memory" in markdown
    assert "## LLM tasks: base vs compressed, item by item" in markdown and "### Perplexity" in markdown
    assert "correct→wrong" in (first / "report.html").read_text()
    assert main(["report", str(first)]) == 0
    assert (first / "report.md").read_text() == markdown
    flipped = [dict(r, predicted=1 - r["predicted"]) if (r["set"], r["role"]) == ("piqa_offline", "base") else r
               for r in rows]
    (first / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in flipped))
    assert main(["report", str(first)]) == 2  # the rows no longer give back the card's accuracy
    (first / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["compare", str(first), str(second), "--out", str(tmp_path / "cmp")]) == 0
    page = (tmp_path / "cmp" / "compare.md").read_text()
    assert "## LLM tasks: change vs the run's base" in page and (tmp_path / "cmp" / "llm.png").stat().st_size > 0


def test_cli_lm_eval_with_a_users_yaml(tmp_path):
    data = write_llm_data(tmp_path / "data")
    items = tmp_path / "yes_no.jsonl"
    items.write_text("".join(json.dumps({"q": f"Is {n} even?", "a": int(n % 2 == 0)}) + "\n" for n in range(5)))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "yes_no.yaml").write_text(
        f"task: yes_no\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {items}\n"
        "output_type: multiple_choice\ntest_split: test\ndoc_to_text: 'Question: {{q}}\\nAnswer:'\n"
        "doc_to_target: '{{a}}'\ndoc_to_choice: ['no', 'yes']\nmetric_list:\n  - metric: acc\n")
    out = tmp_path / "out"
    assert main(["compress", "--task", "lm-eval", "--lm-eval-tasks", "yes_no,piqa_offline", "--lm-eval-include",
                 str(mine), "--data-dir", str(data), "--method", "quantize", "--dtype", "int8", "--out", str(out),
                 *[a for a in COMMON if a != "--recovery" and a != "none"]]) == 0
    card = json.loads((out / "report.json").read_text())
    assert list(card["llm"]["tasks"]) == ["yes_no", "piqa_offline"] and card["llm"]["tasks"]["yes_no"]["n"] == 3
    assert card["llm"]["tasks"]["yes_no"]["source"].endswith("yes_no.yaml")
    assert "language_model" in card  # the data folder holds WikiText-2
