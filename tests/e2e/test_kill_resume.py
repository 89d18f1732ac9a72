"""kill -9 of a streamed ``apply`` midway (issue 43), then the same call again: the killed run left
no output folder (nothing half-written to load) and one hidden temporary folder, which loads neither
with forgetless nor with transformers; the rerun writes the weights of an uninterrupted run (sha256)
and removes the temporary folder. ``benchmarks/kill_resume.py`` measures every kill point (first
layer, midway, while writing; an LLM suite while evaluating) and SmolLM2; this test runs its worker."""
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import transformers

import forgetless
from forgetless.errors import ForgetlessError
from forgetless.methods.sparsegpt.config import SparseGptConfig
from forgetless.models.io import load_model
from forgetless.models.tiny import tiny_llama_config

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from kill_resume import TEXTS  # noqa: E402  (the worker's calibration texts)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_streamed_apply_killed_midway_reruns_to_the_same_weights(tmp_path, minilm_tokenizer):
    folder = tmp_path / "llama"
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(tiny_llama_config(minilm_tokenizer.vocab_size, minilm_tokenizer.pad_token_id,
                                                    tie_word_embeddings=True)).save_pretrained(folder)
    minilm_tokenizer.save_pretrained(folder)
    config = SparseGptConfig(sparsity=0.5, calibration_examples=8, calibration_length=32, calibration_batch=4)
    reference = forgetless.apply_streamed(str(folder), config, calibration=TEXTS, out_dir=tmp_path / "reference")
    out, marker = tmp_path / "out", tmp_path / "marker"
    worker = subprocess.Popen(
        [sys.executable, str(ROOT / "benchmarks" / "kill_resume.py"), "--worker", "--job", "streamed", "--point",
         "midway", "--marker", str(marker), "--target", str(out), "--folder", str(folder), "--calibration", "8",
         "--seq-len", "32"], env={**os.environ, "PYTHONPATH": str(ROOT)}, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not marker.exists():
        assert worker.poll() is None, worker.stderr.read()[-2000:]
        assert time.time() < deadline, "the worker never reached layer 2"
        time.sleep(0.2)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    left = list(tmp_path.glob(".out.tmp-*"))
    assert not out.exists() and len(left) == 1, sorted(p.name for p in tmp_path.iterdir())
    assert (left[0] / ".model.safetensors.4-byte").stat().st_size > 0  # layers 0-2 were written before the kill
    for half_written in (out, left[0]):
        with pytest.raises(ForgetlessError):
            load_model(half_written)
    with pytest.raises((OSError, ValueError)):  # no config.json: not a model folder
        transformers.AutoModelForCausalLM.from_pretrained(left[0], use_safetensors=True)
    forgetless.apply_streamed(str(folder), config, calibration=TEXTS, out_dir=out)
    assert sha256(out / "model.safetensors") == sha256(reference / "model.safetensors")
    assert not list(tmp_path.glob(".out.tmp-*"))  # the kill's temporary folder is gone
