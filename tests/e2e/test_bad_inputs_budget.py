"""Bad inputs on a bit budget (issue 52): ``--bits-budget B --budget-formats …`` of ``rtn``, ``gptq``, ``awq``:
a budget outside the candidates' range (nominal, and on the model's units), formats of another scheme family
or spelled wrong, a budget on a method that does not quantize, without calibration text, streamed, and a run
that spends a budget (its card). Judged as ``test_bad_inputs_llm.py`` judges its own (``judge``: clear,
correct, unclear, traceback, silent, destructive)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from forgetless.methods.gptq.config import GptqConfig

from bad_llm_files import SMALL
from test_bad_inputs_llm import apply_object, exit_zero, lm_eval, run_case, streamed
from test_bad_inputs_sensitivity import mixtral_folder, on_model

RTN = ("--method", "rtn")
TINY = ("--budget-formats", "W4A16-g16,W4A16-g32,W8A16,kept")  # tiny-llama's widths: 32 and 64


def spent(result, p, out: Path):
    """A correct run: exit 0, the budget kept, several formats chosen, the card's section, table and plot."""
    exit_zero(result, p, out)
    card = json.loads((out / "report.json").read_text())
    section = card["method"]["sections"]["budget"]
    assert section["bits_per_weight"] <= section["bits_budget"] == 6.0, section["bits_per_weight"]
    assert section["units"] == "blocks" and len(section["assignment"]) == 4
    assert card["method"]["sections"]["quantization"]["bits"] is None
    text = (out / "report.md").read_text()
    assert "## Bit budget: 6 bits per weight" in text and "![budget_bits.png](budget_bits.png)" in text
    assert (out / "budget_bits.png").stat().st_size > 0
    check = section["uniform_check"]  # the uniform format of the same or larger size, paired on the same items
    assert check["bits_per_weight"] >= section["bits_per_weight"] and check["format"] in TINY[1].split(",")
    assert check["verdict"] in ("better", "worse", "not measurably different"), check["verdict"]
    assert check["near_chance"] and check["tasks"] == ["t_ok"]  # tiny-llama guesses: every task, flagged
    assert check["flips"]["n"] == check["accuracy"]["base"]["n"] == card["llm"]["tasks"]["t_ok"]["n"]
    assert check["difference"]["value"] == pytest.approx(check["accuracy"]["compressed"]["value"]
                                                         - check["accuracy"]["base"]["value"])
    assert f"### Against uniform {check['format']}: {check['verdict']}" in text
    config = json.loads((out / "model" / "config.json").read_text())["quantization_config"]
    used = {row["format"] for row in section["assignment"]} - {"kept"}
    assert len(config["config_groups"]) == len(used), (config["config_groups"].keys(), used)


def applied(model, p, out):
    """gptq under the budget: each block's linears in one format, at least two formats over the blocks."""
    groups = {int(getattr(m, "grouped_ints").group_size) if hasattr(m, "grouped_ints") else None
              for m in model.model.layers.modules() if isinstance(m, torch.nn.Linear)}
    assert len(groups) >= 2, groups


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    texts = ("--calibration-data", "{texts}")
    return [
        ("budget-below-the-smallest-format", lm_eval("t_ok", *texts, method=(*RTN, "--bits-budget", "3")),
         r"--bits-budget 3: below the smallest candidate; feasible: 4.25 \(W4A16-g128\) to below 32 \(kept: "
         r"everything in it leaves nothing to choose\) bits per weight with --budget-formats W4A16-g128,W4A16-g64,"
         r"W8A16,kept"),
        ("budget-above-the-largest-format", lm_eval("t_ok", *texts, method=(*RTN, "--bits-budget", "40", *TINY)),
         r"--bits-budget 40: at or above the largest candidate; feasible: 5 \(W4A16-g32\) to below 32 \(kept"),
        ("budget-below-what-the-model-reaches",  # tiny-llama's 32 inputs take no group of 128 or 64
         lm_eval("t_ok", *texts, method=(*RTN, "--bits-budget", "4.5")),
         r"--bits-budget 4.5: below the least this model's 4 units can store with --budget-formats "
         r"W4A16-g128,W4A16-g64,W8A16,kept; feasible: 8.\d+ to below 32 bits per weight"),
        ("budget-format-of-another-family", lm_eval("t_ok", *texts, method=(
            "--scheme", "FP8-DYNAMIC", "--bits-budget", "9", "--budget-formats", "W4A16-g16,FP8,kept")),
         r"--budget-formats W4A16-g16: one folder mixes the formats of the run's scheme family \(--weight-type fp8: "
         r"FP8, kept\)"),
        ("budget-w4-with-int8-inputs", lm_eval("t_ok", *texts, method=(
            *RTN, "--bits", "8", "--group-size", "-1", "--activations", "int8-token", "--bits-budget", "9",
            "--budget-formats", "W4A16-g16,W8A8,kept")),
         r"--budget-formats W4A16-g16: one folder mixes the formats .*\(--activations int8-token: W8A8, kept\)"),
        ("budget-format-misspelled", lm_eval("t_ok", *texts, method=(
            *RTN, "--bits-budget", "6", "--budget-formats", "W5A16,kept")),
         r"--budget-formats W5A16: not a format; spell W<bits>A16-g<group>"),
        ("budget-one-format", lm_eval("t_ok", *texts, method=(
            *RTN, "--bits-budget", "8", "--budget-formats", "W8A16")),
         r"--budget-formats W8A16: a budget chooses among at least two formats"),
        ("budget-formats-without-budget", lm_eval("t_ok", *texts, method=(*RTN, *TINY)),
         r"--budget-formats W4A16-g16,W4A16-g32,W8A16,kept: chooses among formats for --bits-budget"),
        ("no-uniform-check-without-budget", lm_eval("t_ok", *texts, method=(*RTN, "--no-uniform-check")),
         r"--no-uniform-check: skips the check of a bit budget's mix; give --bits-budget or drop it"),
        ("budget-moe-experts", on_model(mixtral_folder, *texts, *RTN, "--bits-budget", "6", *TINY),
         r"--bits-budget 6: model.layers.0.mlp.experts.0.gate_up_proj is one expert of a fused mixture-of-experts; "
         r".*--ignore 're:.\*experts.\*'"),
        ("budget-asymmetric", lm_eval("t_ok", *texts, method=(*RTN, "--asymmetric", "--bits-budget", "6", *TINY)),
         r"--bits-budget 6 with --asymmetric: .*drop --asymmetric"),
        ("budget-on-wanda", lm_eval("t_ok", *texts, method=("--method", "wanda", "--bits-budget", "5")),
         r"--bits-budget does not apply to method wanda"),
        ("budget-on-quantize-int8", lm_eval("t_ok", method=("--method", "quantize", "--bits-budget", "5")),
         r"--bits-budget does not apply to method quantize"),
        ("budget-rtn-without-text", lm_eval("t_ok", method=(*RTN, "--bits-budget", "6", *TINY)),
         r"--bits-budget 6: measures rtn's units on calibration text; .*--calibration-data"),
        ("budget-streamed-gptq", streamed("llama", GptqConfig(bits_budget=6.0, group_size=16, **SMALL)),
         r"^bits_budget=6: measures each unit of the whole model .*pass a model object"),
        ("budget-rtn-blocks-spent", lm_eval("t_ok", *texts, method=(*RTN, "--bits-budget", "6", *TINY)), spent),
        ("budget-apply-gptq", apply_object(GptqConfig(bits_budget=6.0, budget_formats=list(TINY[1].split(",")),
                                                      **SMALL)), applied),
    ]


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_budget_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
