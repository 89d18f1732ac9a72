"""One ``--device`` for a whole run (issue 55): ``auto`` is a CUDA GPU when there is one, else the CPU; the base and
the student are moved there before any step, so calibration, scoring, generation and the speed check (whose
inputs follow their model) run there; the card says which device ran. Before, an LLM run without training
stayed on the CPU whatever ``--device`` said. Tested without a GPU: the run is told to use ``cuda``, moving a
model there is recorded instead of done, and every model that runs a forward must have been moved."""
import json

import pytest
import torch
import transformers

from forgetless import arguments, validate
from forgetless.arguments import run_device
from forgetless.cli import main
from forgetless.errors import OptionError

from llm_data import write_llm_data


def test_auto_is_cuda_when_there_is_one_else_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert run_device("auto") == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert run_device("auto") == "cpu" and run_device("cpu") == "cpu"
    with pytest.raises(OptionError, match=r"device.cuda: .*(without CUDA|no cuda device).*; use cpu$"):
        run_device("cuda")


def test_device_cuda_without_a_gpu_is_one_error_before_any_work(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    out = tmp_path / "out"
    code = main(["compress", "--model", "tiny-bert", "--method", "magnitude", "--device", "cuda", "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("forgetless: error: --device cuda: "), err
    assert not out.exists()


def test_every_model_a_step_runs_was_moved_to_the_runs_device(tmp_path, monkeypatch, capsys):
    """``--device cuda`` on a CPU: the calibration (gptq), the lm-eval scoring, the divergence generation and
    the speed check each run a model that the run moved to ``cuda``; the card records ``cuda``."""
    moved, ran = set(), set()
    to = torch.nn.Module.to

    def record_cuda(module, *args, **kwargs):
        device = torch._C._nn._parse_to(*args, **kwargs)[0]
        if device is not None and device.type == "cuda":
            moved.add(id(module))
            return module
        return to(module, *args, **kwargs)

    def record_forward(module, inputs):
        if isinstance(module, transformers.GenerationMixin):  # a whole model, not one of its layers
            ran.add(id(module))

    monkeypatch.setattr(torch.nn.Module, "to", record_cuda)
    for module in (arguments, validate):
        monkeypatch.setattr(module, "check_device", lambda device, flag="--device": None)
    handle = torch.nn.modules.module.register_module_forward_pre_hook(record_forward)
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Name a colour.\nCount to three.\n", encoding="utf-8")
    out = tmp_path / "out"
    try:
        code = main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "gptq", "--group-size", "32",
                     "--calibration-examples", "2", "--recovery", "none", "--task", "lm-eval", "--lm-eval-tasks",
                     "piqa_offline", "--data-dir", str(write_llm_data(tmp_path / "data")), "--eval-size", "2",
                     "--divergence-prompts", "2", "--divergence-file", str(prompts), "--divergence-max-new-tokens",
                     "3", "--bench-repeats", "1", "--bench-seq-len", "8", "--bench-new-tokens", "2", "--device",
                     "cuda", "--no-progress", "--out", str(out)])
    finally:
        handle.remove()
    assert code == 0, capsys.readouterr().err[-2000:]
    assert len(ran) >= 2 and ran <= moved, f"{len(ran - moved)} of the {len(ran)} models that ran stayed on the CPU"
    card = json.loads((out / "report.json").read_text())
    assert card["environment"]["hardware"]["device"] == "cuda" and card["run"]["train"]["device"] == "cuda"
    assert "; ran on cuda" in (out / "report.md").read_text()
