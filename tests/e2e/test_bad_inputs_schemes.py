"""Bad inputs on the quantization schemes and the method options (issue 54), judged as
``test_bad_inputs_llm.py`` judges its own (``clear``: one error naming the culprit before any work;
``correct``: it runs and what it gave is right): ``--scheme`` with options that refine it, contradict it or
belong to no method of it, ``--targets`` / ``--ignore`` beside a scheme of two methods, ``--recovery none``
where nothing trains, configs built in Python with values of the wrong type or one name for a list, and a
scheme's name given to ``forgetless.apply`` / ``compress``."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import forgetless
from forgetless.methods.gptq.config import GptqConfig
from forgetless.methods.wanda.config import WandaConfig
from forgetless.quantization.compressed_tensors import quantized_linears

from bad_llm_files import SMALL
from test_bad_inputs_llm import apply_object, cli, exit_zero, files_task, llama, lm_eval, run_case

LAYERS = 4  # the fixture's tiny Llama: 4 blocks of 7 linears
CALIBRATED = ("--model", "{llama}", "--model-kind", "causal-lm", "--calibration-data", "{texts}",
              "--calibration-examples", "4")


def scheme(*flags, extra=()):
    """``forgetless compress`` of the fixture's Llama folder on the lm-eval task t_ok with ``flags``."""
    return lm_eval("t_ok", *CALIBRATED, *extra, method=flags)


# ----- what a correct run gave ---------------------------------------------------------------------------
def down_proj_left_alone(result, p, out):
    """W8A8-INT8 with --ignore down_proj: every down_proj exactly the base's, the card counts 24 layers."""
    exit_zero(result, p, out)
    card = json.loads((out / "report.json").read_text())
    assert card["params"]["stored"]["quantized"]["layers"] == 6 * LAYERS, card["params"]["stored"]
    assert [m["config"]["ignore"] for m in (card["method"], *card["method"]["then"])] == [["re:.*down_proj"]] * 2
    ignored = json.loads((out / "model" / "config.json").read_text())["quantization_config"]["ignore"]
    saved, base = load_file(out / "model" / "model.safetensors"), load_file(Path(p["llama"]) / "model.safetensors")
    for i in range(LAYERS):
        name = f"model.layers.{i}.mlp.down_proj"
        assert name in ignored and torch.equal(saved[f"{name}.weight"], base[f"{name}.weight"]), name
        assert f"model.layers.{i}.mlp.up_proj.weight_scale" in saved, f"up_proj of block {i} is not quantized"


def card_says(methods):
    """A run whose card names ``methods`` (method, then …) and the scheme."""
    def check(result, p, out):
        exit_zero(result, p, out)
        card = json.loads((out / "report.json").read_text())
        assert [card["method"]["name"], *(m["name"] for m in card["method"]["then"])] == methods, card["method"]
    return check


def only_q_proj_pruned(result, p, out):
    """Wanda with ``targets='re:.*q_proj'`` (one string): q_proj half zero, every other linear the base's."""
    base = llama(p)
    for name, module in result.named_modules():
        if isinstance(module, torch.nn.Linear) and ".layers." in name:
            zeros = float((module.weight == 0).float().mean())
            if name.endswith("q_proj"):
                assert abs(zeros - 0.5) < 0.01, (name, zeros)
            else:
                assert torch.equal(module.weight, base.get_submodule(name).weight), name


def fp8_everywhere(result, p, out):
    """``apply(model, "FP8-DYNAMIC")``: every linear of the blocks fp8 with fp8 inputs per token."""
    quantized = quantized_linears(result)
    assert len(quantized) == 7 * LAYERS, sorted(quantized)
    assert {scheme_["weights"]["type"] for _, scheme_ in quantized.values()} == {"float"}, quantized


def compress_ran_scheme(result, p, out):
    """``compress(..., scheme="W8A8-INT8")``: the card's methods are the scheme's (not the default method)."""
    method = result.card.method
    assert [method.name, *(m["name"] for m in method.then)] == ["smoothquant", "gptq"], method


def recipe(text: str):
    """``forgetless run`` of a recipe file holding ``text`` (written beside the output folder)."""
    def call(p, out):
        out.parent.mkdir(parents=True, exist_ok=True)
        path = out.parent / "recipe.yaml"
        path.write_text(text.format(**p))
        return cli("run", str(path), "--out", "{out}")(p, out)
    return call


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    return [
        # ----- options beside a scheme: reach every method, refine or contradict
        ("scheme-w8a8-ignore-reaches-the-quantizer", scheme("--scheme", "W8A8-INT8", "--ignore", "re:.*down_proj"),
         down_proj_left_alone),
        ("scheme-w4a16-bits-8", scheme("--scheme", "W4A16", "--bits", "8", "--group-size", "16"),
         r"error: --scheme W4A16 --bits 8: W4A16 means bits 4; --scheme W8A16 means bits 8"),
        ("scheme-fp8-asymmetric", scheme("--scheme", "FP8", "--asymmetric"),
         r"error: --scheme FP8 --asymmetric: FP8 means asymmetric false"),
        ("scheme-w4a16-asymmetric", scheme("--scheme", "W4A16", "--asymmetric", "--group-size", "16"),
         r"error: --scheme W4A16 --asymmetric: .*--scheme W4A16-AWQ means asymmetric true"),
        ("scheme-w8a16-int8-inputs", scheme("--scheme", "W8A16", "--activations", "int8-token"),
         r"error: --scheme W8A16 --activations int8-token: .*--scheme W8A8-INT8 means activations int8-token"),
        ("scheme-fp8-dynamic-int-weights", lm_eval("t_ok", method=("--scheme", "FP8-DYNAMIC", "--weight-type", "int")),
         r"error: --scheme FP8-DYNAMIC --weight-type int: FP8-DYNAMIC means weight_type fp8"),
        ("scheme-w8a8-then-4-bits", scheme("--scheme", "W8A8-INT8", "--then", "gptq:bits=4"),
         r"error: --scheme W8A8-INT8 --then gptq:bits=4: W8A8-INT8 means bits 8; give --method smoothquant --then gptq"),
        ("scheme-option-of-no-method-of-it", lm_eval("t_ok", method=("--scheme", "FP8-DYNAMIC", "--calibration-examples",
                                                                     "4")),
         r"error: --calibration-examples does not apply to --scheme FP8-DYNAMIC \(it runs rtn;"),
        ("scheme-sparsity", scheme("--scheme", "W4A16", "--sparsity", "0.5"),
         r"error: --sparsity does not apply to --scheme W4A16 \(it runs gptq; --sparsity is an option of"),
        ("scheme-w8a8-group-size-refines", scheme("--scheme", "W8A8-INT8", "--group-size", "16"), card_says(["smoothquant", "gptq"])),
        ("scheme-as-method", lm_eval("t_ok", method=("--method", "W4A16")),
         r"error: --method W4A16: a quantization scheme, not a method; give --scheme W4A16"),
        ("scheme-lower-case", lm_eval("t_ok", method=("--scheme", "w8a8-int8")), r"\(did you mean W8A8-INT8\?\)"),
        # ----- --recovery none where nothing trains; a real recovery where it cannot run
        ("scheme-w8a8-recovery-none", scheme("--scheme", "W8A8-INT8", "--recovery", "none"), card_says(["smoothquant", "gptq"])),
        ("scheme-fp8-dynamic-recovery-none", lm_eval("t_ok", method=("--scheme", "FP8-DYNAMIC", "--recovery", "none")),
         card_says(["rtn"])),
        ("method-rtn-recovery-none", lm_eval("t_ok", method=("--method", "rtn", "--group-size", "16", "--recovery", "none")),
         card_says(["rtn"])),
        ("scheme-fp8-dynamic-recovery-fine-tune", lm_eval("t_ok", method=("--scheme", "FP8-DYNAMIC", "--recovery",
                                                                          "fine-tune")),
         r"error: --recovery fine-tune: rtn trains nothing after compressing \(it has no recovery step\)"),
        ("scheme-w4a16-recovery-fine-tune", scheme("--scheme", "W4A16", "--group-size", "16", "--recovery", "fine-tune"),
         r"error: --recovery fine-tune: gptq stores integer codes"),
        ("then-rtn-recovery-fine-tune", scheme("--method", "smoothquant", "--then", "rtn:recovery=fine-tune"),
         r"error: --then rtn:recovery=fine-tune: rtn trains nothing"),
        ("method-nash-recovery-none", lm_eval("t_ok", method=("--method", "nash", "--recovery", "none")),
         r"error: --recovery none: nash always trains as it compresses"),
        # ----- a recipe's scheme with a contradicting option
        ("recipe-scheme-contradicted", recipe("scheme: W4A16\nbase: as-is\nmodel: tiny-llama\nmodel_kind: causal-lm\n"
                                              "task: synthetic\nmethod:\n  bits: 8\n  group_size: 16\n"),
         r"error: .*recipe.yaml: key 'scheme' W4A16 key 'method.bits' 8: W4A16 means bits 4"),
        # ----- configs built in Python
        ("config-bits-text", lambda p, out: GptqConfig(bits="4"), r"^bits='4': expected a whole number, got str '4'$"),
        ("config-group-size-float", lambda p, out: GptqConfig(group_size=64.0),
         r"^group_size=64.0: expected a whole number, got float 64.0$"),
        ("config-asymmetric-text", lambda p, out: GptqConfig(asymmetric="false"),
         r"^asymmetric='false': expected True or False, got str 'false'$"),
        ("config-sparsity-text", lambda p, out: WandaConfig(sparsity="0.5"), r"^sparsity='0.5': expected a number, got str"),
        ("config-targets-one-string", apply_object(WandaConfig(targets="re:.*q_proj", **SMALL)), only_q_proj_pruned),
        ("config-targets-numbers", lambda p, out: WandaConfig(targets=[1, 2]), r"^targets=1: expected text, got int 1$"),
        # ----- a scheme's name in the Python API
        ("apply-scheme-name", apply_object("FP8-DYNAMIC", calibration=None), fp8_everywhere),
        ("apply-scheme-typo", apply_object("FP8-DYNAMC", calibration=None), r"did you mean the scheme 'FP8-DYNAMIC'\?"),
        ("compress-scheme", lambda p, out: forgetless.compress(
            "tiny-llama", files_task(p), scheme="W8A8-INT8", base="as-is", model_kind="causal-lm",
            calibration_data=p["texts"], speed={"repeats": 1, "seq_len": 16}, progress=False), compress_ran_scheme),
        ("compress-scheme-and-method", lambda p, out: forgetless.compress("tiny-llama", files_task(p), "gptq",
                                                                          scheme="W4A16"),
         r"^scheme=W4A16: a scheme names its methods; give scheme alone"),
    ]


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_scheme_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
