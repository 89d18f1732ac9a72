"""Bad inputs on mixture-of-experts models and on the cards of quantized models (issue 54), judged as
``test_bad_inputs_llm.py`` judges its own (``judge``: clear / correct / unclear / traceback / silent /
destructive):

* a scheme or format the experts cannot take (W8A8-INT8, FP8-DYNAMIC on fused experts) is ONE error
  before any work, not after SmoothQuant ran;
* a group size is answered once, with the largest that fits every quantized linear, the experts'
  narrower inputs included (the config's widths alone miss them);
* the cards say what ran: a Mixtral W4A16-AWQ model card prints no stock recipe that fails on its
  experts, a ``--scheme`` run is titled by its scheme, a MoE card gives one quantized layer count;
* a causal LM quantized by rtn on a classification task is still the causal LM: ``evaluate`` scores it
  on an lm-eval task.

Tiny Mixtral and Qwen3-MoE folders (character tokenizer, ``tests/any_decoder.py``) beside the fixture
of ``test_bad_inputs_llm.py``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import forgetless
from forgetless.methods.gptq.config import GptqConfig
from forgetless.report.model_card import write_model_card

from any_decoder import char_tokenizer, tiny_model
from bad_llm_files import SMALL
from test_bad_inputs_llm import Cli, apply_object, cli, llm_paths, lm_eval, run_case, streamed

FILES_TASK = ("--task", "files", "--train", "{tsv}", "--dev", "{tsv}", "--text-a", "sentence", "--text-b", "",
              "--labels", "neg,pos")
QUICK = ("--no-progress", "--speed", "none")
CALIBRATE = ("--calibration-data", "{texts}", "--calibration-examples", "4", "--calibration-batch", "2")
EXPERT = r"model.layers.0.mlp.experts.0.gate_up_proj is one expert of a fused mixture-of-experts \(ExpertLinear\)"
NARROW = r"model.layers.0.mlp.experts.0.down_proj has 32 inputs, fewer than one group; use at most 32"


def moe_folders(root: Path) -> dict:
    """Tiny Mixtral and Qwen3-MoE folders as ``save_pretrained`` writes them, each with its tokenizer."""
    found = {}
    for family in ("mixtral", "qwen3_moe"):
        folder = root / family
        tiny_model(family, max_position_embeddings=256).save_pretrained(folder)
        char_tokenizer().save_pretrained(folder)
        found[family] = str(folder)
    return found


def moe_lm_eval(family: str, *method: str):
    """``forgetless compress`` of the ``family`` folder on the fixture's lm-eval task ``t_ok``."""
    return lm_eval("t_ok", "--model", "{" + family + "}", "--model-kind", "causal-lm", method=method)


def moe_object(family: str):
    return lambda p: tiny_model(family)


def compress_files(model: str, *method: str):
    """``forgetless compress`` of ``model`` (a name or ``{folder}``) on the fixture's TSV, scored zero-shot."""
    return cli("compress", "--model", model, "--base", "as-is", "--model-kind", "causal-lm", *FILES_TASK, *QUICK,
               "--out", "{out}", *method)


# ----- what a correct run gave ---------------------------------------------------------------------------
def awq_mixtral_card(p, out):
    """A tiny Mixtral quantized as W4A16-AWQ (groups of 16), saved with its model card."""
    config = forgetless.METHODS.make_config("awq", {"bits": 4, "group_size": 16, "asymmetric": True, **SMALL})
    model = forgetless.apply(tiny_model("mixtral"), config, calibration=["a few words of text"] * 4,
                             tokenizer=char_tokenizer())
    folder = forgetless.save_model(model, out, tokenizer=char_tokenizer())
    write_model_card(folder)
    return folder


def prints_only_recipes_that_load(folder, p, out):
    """No stock recipe on the card (stock loading fails on the asymmetric experts); forgetless' loads it."""
    card = (Path(folder) / "README.md").read_text()
    section = card.split("## How to load", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks and not any("from_pretrained" in block for block in blocks), blocks
    assert "cannot rebuild this model" in section and "forgetless.load_model" in section, section[:400]
    model, _ = forgetless.load_model(folder)
    assert type(model).__name__ == "MixtralForCausalLM"


def titled_by_scheme(result, p, out):
    assert result.code == 0, result.err[-500:]
    title = (out / "report.md").read_text().splitlines()[0]
    assert title.endswith("FP8-DYNAMIC (rtn fp8 weights per row, fp8 inputs per token)"), title
    card = (out / "model" / "README.md").read_text()
    assert "# tiny-llama-FP8-DYNAMIC-files" in card and "rtn 8-bit" not in card, card[:600]


def one_layer_count(result, p, out):
    """36 linears quantized (12 attention, 24 expert projections); the file stores 48 (w1, w2, w3 per expert)."""
    assert result.code == 0, result.err[-500:]
    report, card = (out / "report.md").read_text(), (out / "model" / "README.md").read_text()
    counts = {int(n) for n in re.findall(r"(\d+) quantized layers", report)}
    counts |= {int(n) for n in re.findall(r"compressed (\d+) linear layers", report)}
    counts |= {int(n) for n in re.findall(r"\((\d+) layers\)", card)}
    assert counts == {36}, counts


def rtn_then_lm_eval(p, out):
    """A causal LM quantized by rtn on a classification task, then scored on an lm-eval task."""
    done = compress_files("tiny-llama", "--method", "rtn", "--group-size", "16")(p, out)
    assert done.code == 0, done.err[-500:]
    return cli("evaluate", str(out / "model"), "--task", "lm-eval", "--lm-eval-tasks", "t_ok", "--lm-eval-include",
               "{yamls}")(p, out)


def scored(result, p, out):
    assert isinstance(result, Cli) and result.code == 0, result.err[-500:]


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    return [
        # ----- formats the fused experts cannot take: refused before any work
        ("moe-w8a8-scheme-qwen3", moe_lm_eval("qwen3_moe", "--scheme", "W8A8-INT8", "--calibration-data", "{texts}"),
         r"error: --scheme W8A8-INT8: gptq:activations=int8-token: " + EXPERT),
        ("moe-w8a8-then-qwen3", moe_lm_eval("qwen3_moe", "--method", "smoothquant", "--calibration-data", "{texts}",
                                            "--then", "gptq:bits=8,group_size=-1,activations=int8-token"),
         r"error: --then gptq:activations=int8-token: " + EXPERT),
        ("moe-fp8-dynamic-scheme-mixtral", moe_lm_eval("mixtral", "--scheme", "FP8-DYNAMIC"),
         r"error: --scheme FP8-DYNAMIC: rtn:weight_type=fp8: " + EXPERT),
        ("moe-apply-w8a8-object", apply_object([forgetless.METHODS.make_config("smoothquant", SMALL), GptqConfig(
            bits=8, group_size=-1, activations="int8-token", **SMALL)], model=moe_object("qwen3_moe"),
            tokenizer=char_tokenizer()), r"^activations=int8-token: " + EXPERT),
        # ----- one group-size answer that fits the experts too
        ("moe-w4a16-scheme-group-qwen3", moe_lm_eval("qwen3_moe", "--scheme", "W4A16", "--calibration-data", "{texts}"),
         r"error: --scheme W4A16: gptq:group_size=128: " + NARROW + r".*\(32 fits every quantized layer\)"),
        ("moe-gptq-group-64-qwen3", moe_lm_eval("qwen3_moe", "--method", "gptq", "--group-size", "64",
                                                "--calibration-data", "{texts}"),
         r"error: --group-size 64: " + NARROW + r", or -1 for one group per output row \(32 fits every"),
        ("moe-awq-group-64-object", apply_object(forgetless.METHODS.make_config("awq", {"group_size": 64, **SMALL}),
                                                 model=moe_object("qwen3_moe"), tokenizer=char_tokenizer()),
         r"^group_size=64: " + NARROW),
        ("moe-rtn-group-48-object", apply_object(forgetless.METHODS.make_config("rtn", {"group_size": 48}),
                                                 model=moe_object("qwen3_moe"), calibration=None,
                                                 tokenizer=char_tokenizer()),
         r"^group_size=48: " + NARROW),
        ("moe-streamed-group-64", streamed("qwen3_moe", GptqConfig(group_size=64, **SMALL)), r"^group_size=64: " + NARROW),
        # ----- the cards say what ran
        ("moe-awq-card-prints-no-failing-recipe", awq_mixtral_card, prints_only_recipes_that_load),
        ("fp8-dynamic-card-names-the-scheme", compress_files("tiny-llama", "--scheme", "FP8-DYNAMIC"), titled_by_scheme),
        ("moe-card-one-quantized-layer-count", compress_files("{mixtral}", "--method", "gptq", "--group-size", "16",
                                                              *CALIBRATE), one_layer_count),
        ("rtn-on-classification-still-a-causal-lm", rtn_then_lm_eval, scored),
    ]


def moe_paths(root: Path) -> dict:
    paths = llm_paths(root)
    return {**paths, **moe_folders(Path(paths["root"]) / "moe")}


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return {**llm_files, **moe_folders(Path(llm_files["root"]) / "moe")}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_moe_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
