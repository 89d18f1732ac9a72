"""``benchmarks/smollm2_glue_findings.py`` (the seeds' table for an LLM): a variant's result file is written
(JSON, not the card's typed intervals) and its paired changes are the hand-counted ones. Fabricated predictions
on the offline MNLI → HANS task; no model runs."""
from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from forgetless.data.tasks import load_task
from forgetless.fsutil import atomic_write_json

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import smollm2_glue_findings as findings  # noqa: E402

EVAL_SIZE = 20


def _result(task, predicted: dict) -> dict:
    """What ``evaluate`` returns for a model whose predictions are ``predicted`` (set → label ids)."""
    sets, correct = {}, {}
    for name, examples in task.eval_sets().items():
        ids = np.asarray(predicted[name])
        correct[name] = examples.map_predictions(ids) == np.asarray(examples.labels)
        sets[name] = {"accuracy": float(correct[name].mean()), "n": len(ids),
                      "predicted_share": {str(k): float(np.mean(ids == k)) for k in range(2 if name != "dev" else 3)}}
        if name == "dev" and examples.hard is not None:
            hard = np.asarray(examples.hard, dtype=bool)
            sets[name].update(hard={"accuracy": float(correct[name][hard].mean())},
                              easy={"accuracy": float(correct[name][~hard].mean())})
    pooled = [name for name in task.pooled if name in sets]
    return {"sets": sets, "pooled_sets": pooled,
            "challenge_pooled": float(np.concatenate([correct[n] for n in pooled]).mean()),
            "predictions": {name: {"predicted": np.asarray(ids).tolist()} for name, ids in predicted.items()}}


@pytest.fixture(scope="module")
def mnli(shared_data):
    return load_task("mnli-small", data_dir=shared_data, seed=0, train_size=16, eval_size=EVAL_SIZE)


def test_a_variant_result_is_written_and_its_flips_are_the_counted_ones(mnli, tmp_path):
    gold = {name: np.asarray(examples.labels) for name, examples in mnli.eval_sets().items()}
    base_pred = {name: labels.copy() for name, labels in gold.items()}
    comp_pred = {name: labels.copy() for name, labels in gold.items()}
    comp_pred["dev"][:4] = (gold["dev"][:4] + 1) % 3       # 4 items lost on dev
    base_pred["dev"][4:5] = (gold["dev"][4:5] + 1) % 3     # 1 gained (the base's mistake, the variant right)
    comp_pred["hans"][:2] = 1 - gold["hans"][:2]           # 2 lost on HANS
    base, comp = _result(mnli, base_pred), _result(mnli, comp_pred)

    result = {"variant": "wanda-50", **findings.compare(mnli, base, comp, seed=0)}
    out = tmp_path / "mnli-small"
    atomic_write_json(out / "base.json", base)
    atomic_write_json(out / "wanda-50.json", result)  # raised TypeError while intervals were the card's dataclass
    written = json.loads((out / "wanda-50.json").read_text())

    assert written["flips"]["dev"]["correct_to_wrong"] == 4 and written["flips"]["dev"]["wrong_to_correct"] == 1
    assert written["flips"]["hans"]["correct_to_wrong"] == 2 and written["flips"]["hans"]["wrong_to_correct"] == 0
    assert written["flips"]["challenge_pooled"] == written["flips"]["hans"]  # HANS is MNLI's one pooled set
    assert written["intervals"]["delta"]["sets"]["dev"]["value"] == pytest.approx((1 - 4) / EVAL_SIZE)
    hard = np.asarray(mnli.dev.hard, dtype=bool)
    lost = np.zeros(EVAL_SIZE, dtype=bool)
    lost[:4] = True
    gained = np.zeros(EVAL_SIZE, dtype=bool)
    gained[4] = True
    for part, mask in (("hard", hard), ("easy", ~hard)):
        expected = (gained[mask].sum() - lost[mask].sum()) / mask.sum()
        assert written["hard_easy_delta"][part]["value"] == pytest.approx(expected)

    args = types.SimpleNamespace(out=str(tmp_path), tasks=["mnli-small"], data_dir=None, seed=0, eval_size=EVAL_SIZE)
    findings.table(args)
    text = (tmp_path / "results.md").read_text()
    assert "| mnli-small | wanda-50 | -15.0 [" in text  # Δ dev: (1 − 4) / 20 items
    assert "4 / 1 (" in text and "2 / 0 (" in text
