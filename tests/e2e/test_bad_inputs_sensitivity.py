"""Bad inputs on the sensitivity pass (issue 54): ``--sensitivity blocks | linear-types`` of the quantizing
methods, on LLM (lm-eval) tasks and classifiers, with and without calibration text, its mixed-precision
advice (never every unit; an ``--ignore`` option forgetless accepts), mixture-of-experts models, and the
calibration text of heads / block-influence on an LLM task. Judged as ``test_bad_inputs_llm.py`` judges
its own (``judge``: clear, correct, unclear, traceback, silent, destructive)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import transformers

from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.rtn.config import RtnConfig

from bad_llm_files import SMALL
from test_bad_inputs_llm import apply_object, cli, exit_zero, lm_eval, protocol_names, run_case, streamed

RTN = ("--method", "rtn", "--group-size", "16")


def section(out: Path) -> dict:
    """The card's sensitivity section of the run written to ``out``."""
    return json.loads((out / "report.json").read_text())["method"]["sections"]["sensitivity"]


def ranked_with_texts(texts: str, units: int | None = None):
    """A correct run: exit 0, the protocol names ``texts``, and (``units``) the ranking has that many units."""
    def check(result, p, out):
        protocol_names(texts)(result, p, out)
        if units is not None:
            assert len(section(out)["ranking"]) == units, [r["unit"] for r in section(out)["ranking"]]
    return check


def advice_accepted(p, out):
    """The advice of a 4-block run (linear-types: 7 units, 3 kept) run as it says: accepted, and the second
    run's card counts the kept linears out of those quantized (a strict minority of them)."""
    first = lm_eval("t_ok", "--calibration-data", "{texts}", method=(*RTN, "--sensitivity", "linear-types"))(p, out)
    exit_zero(first, p, out)
    advice = section(out)["mixed"]
    assert len(advice["keep"]) == 3 and advice["ignore"].startswith("--ignore re:"), advice
    flag, value = advice["ignore"].split(" ", 1)
    again = out.parent / "again"
    exit_zero(lm_eval("t_ok", method=(*RTN, flag, value))(p, again), p, again)
    before, after = (json.loads((folder / "report.json").read_text())["method"]["sections"]["quantization"]["modules"]
                     for folder in (out, again))
    assert after["ignore"] == value.split(",") and after["modules"] == before["modules"] - len(
        section(out)["mixed_ignore"]) > before["modules"] / 2, (before, after)
    return "accepted"


def small_llama(layers: int):
    """``call(p, out)`` helpers get a tiny Llama folder of ``layers`` blocks written beside ``out``."""
    def folder(p, out) -> str:
        from forgetless.models.tiny import tiny_llama_config

        path = out.parent / f"llama-{layers}"
        if not path.exists():
            torch.manual_seed(0)
            config = tiny_llama_config(p["vocab"], p["tokenizer"].pad_token_id, tie_word_embeddings=True,
                                       num_hidden_layers=layers)
            transformers.LlamaForCausalLM(config).save_pretrained(path)
            p["tokenizer"].save_pretrained(path)
        return str(path)
    return folder


def mixtral_folder(p, out) -> str:
    """A tiny Mixtral (3 blocks of 4 experts) with the fixture's tokenizer, beside ``out``."""
    path = out.parent / "mixtral"
    if not path.exists():
        torch.manual_seed(0)
        config = transformers.MixtralConfig(vocab_size=p["vocab"], hidden_size=64, intermediate_size=32,
                                            num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                                            num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=512,
                                            pad_token_id=p["tokenizer"].pad_token_id)
        transformers.MixtralForCausalLM(config).save_pretrained(path)
        p["tokenizer"].save_pretrained(path)
    return str(path)


def on_model(folder, *argv):
    """``forgetless compress`` (as ``lm_eval``) on the folder ``folder(p, out)`` makes."""
    def call(p, out):
        return lm_eval("t_ok", "--model", folder(p, out), *argv, method=())(p, out)
    return call


def two_blocks_no_advice(result, p, out):
    exit_zero(result, p, out)
    advice, card = section(out)["mixed"], (out / "report.md").read_text()
    assert "none" in advice and section(out)["mixed_ignore"] == [], advice
    assert "No mixed-precision advice: 2 units" in card and "Mixed precision: the same run" not in card


def experts_ranked(result, p, out):
    exit_zero(result, p, out)
    units = {row["unit"]: row for row in section(out)["ranking"]}
    assert {"mlp.experts.gate_up_proj", "mlp.experts.down_proj"} <= set(units), sorted(units)
    assert units["mlp.experts.down_proj"]["kl"] > 0


def classifier_ranked(result, p, out):
    exit_zero(result, p, out)
    ranking = section(out)
    assert ranking["per"] == "text" and [r["unit"] for r in ranking["ranking"]] and ranking["seconds"] >= 0
    assert "none" in ranking["mixed"]  # tiny-bert has 2 blocks: no advice


def same_order_twice(p, out):
    """The same run twice (same seed): the same ranking, unit by unit, and its cost on the card."""
    argv = ("--calibration-data", "{texts}")
    method = (*RTN, "--sensitivity", "linear-types")
    orders = []
    for folder in (out, out.parent / "again"):
        exit_zero(lm_eval("t_ok", *argv, method=method)(p, folder), p, folder)
        orders.append([(r["unit"], r["kl"]) for r in section(folder)["ranking"]])
        assert f"Measured in {section(folder)['seconds']:g} s." in (folder / "report.md").read_text()
    assert orders[0] == orders[1], orders
    return "same"


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    heads = ("--method", "heads", "--recovery", "none")
    influence = ("--method", "block-influence", "--remove", "1", "--recovery", "none")
    return [
        ("sensitivity-fp8-dynamic-without-text",
         lm_eval("t_ok", method=("--scheme", "FP8-DYNAMIC", "--sensitivity", "blocks")),
         r"--sensitivity blocks: ranks rtn's quantized units on calibration text; .*--calibration-data"),
        ("sensitivity-rtn-without-text", lm_eval("t_ok", method=(*RTN, "--sensitivity", "linear-types")),
         r"--sensitivity linear-types: ranks rtn's quantized units on calibration text; .*--calibration-data"),
        ("sensitivity-card-names-calibration-data", lm_eval("t_ok", "--calibration-data", "{texts}",
                                                          method=(*RTN, "--sensitivity", "blocks")),
         ranked_with_texts("{texts}", units=4)),
        ("sensitivity-card-names-train-texts", lm_eval("t_ok", "--train", "{texts}",
                                                     method=(*RTN, "--sensitivity", "linear-types")),
         ranked_with_texts("{texts}", units=7)),
        ("sensitivity-unknown-units", lm_eval("t_ok", method=(*RTN, "--sensitivity", "heads")),
         r"--sensitivity heads: not one of none, blocks, linear-types"),
        ("sensitivity-on-wanda", lm_eval("t_ok", "--calibration-data", "{texts}",
                                         method=("--method", "wanda", "--sensitivity", "blocks")),
         r"--sensitivity does not apply to method wanda"),
        ("sensitivity-apply-without-base",
         apply_object(RtnConfig(group_size=16, sensitivity="blocks"), calibration=None),
         r"^sensitivity=blocks: compares each quantized unit with the base model"),
        ("sensitivity-apply-gptq-with-texts",
         apply_object(GptqConfig(group_size=16, sensitivity="linear-types", **SMALL)),
         r"^sensitivity=linear-types: compares each quantized unit with the base model.*forgetless.apply has none"),
        ("sensitivity-streamed-gptq", streamed("llama", GptqConfig(group_size=16, sensitivity="blocks", **SMALL)),
         r"^sensitivity=blocks: compares each quantized unit .*forgetless.apply_streamed has none"),
        ("sensitivity-scheme-w4a16-names-texts", lm_eval("t_ok", "--calibration-data", "{texts}", method=(
            "--scheme", "W4A16", "--group-size", "16", "--calibration-examples", "4", "--sensitivity", "blocks")),
         ranked_with_texts("{texts}", units=4)),
        ("sensitivity-two-blocks-no-advice", on_model(small_llama(2), "--calibration-data", "{texts}", *RTN,
                                                      "--sensitivity", "blocks"), two_blocks_no_advice),
        ("sensitivity-advice-is-accepted", advice_accepted, lambda result, p, out: None),
        ("sensitivity-same-seed-same-order", same_order_twice, lambda result, p, out: None),
        ("sensitivity-moe-ranks-experts", on_model(mixtral_folder, "--calibration-data", "{texts}", *RTN,
                                                   "--sensitivity", "linear-types"), experts_ranked),
        ("sensitivity-gptq-classifier-blocks",
         cli("compress", "--model", "tiny-bert", "--task", "files", "--train", "{tsv}", "--dev", "{tsv}", "--text-a",
             "sentence", "--text-b", "", "--labels", "neg,pos", "--method", "gptq", "--group-size", "16",
             "--calibration-examples", "8", "--calibration-batch", "4", "--sensitivity", "blocks", "--epochs", "1",
             "--no-progress", "--bench-repeats", "1", "--bench-seq-len", "16", "--out", "{out}"), classifier_ranked),
        ("heads-llm-without-text", lm_eval("t_ok", method=heads),
         r"--method heads: scores the model on the task's training split, an LLM task's calibration text; "
         r".*--calibration-data"),
        ("heads-llm-calibration-data", lm_eval("t_ok", "--calibration-data", "{texts}", method=heads),
         protocol_names("{texts}")),
        ("block-influence-llm-without-text", lm_eval("t_ok", method=influence),
         r"--method block-influence: scores the model .*--calibration-data"),
        ("block-influence-llm-calibration-data", lm_eval("t_ok", "--calibration-data", "{texts}", method=influence),
         protocol_names("{texts}")),
    ]


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_sensitivity_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
