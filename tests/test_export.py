"""ONNX export round trips (uneven head-pruned BERT, pruned tiny T5 with greedy generation) and a
hub upload that fails fast and clearly offline."""
import json

import numpy as np
import pytest
import torch
import transformers
from conftest import batch, tiny_classifier

from forgetless.errors import ConfigError, ForgetlessError
from forgetless.export import (export_onnx, max_abs_difference, onnx_greedy_generate, ort_session, push_to_hub)
from forgetless.models import surgery
from forgetless.models.io import load_model, save_model

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("arch", ["bert", "distilbert"])
def test_head_pruned_classifier_round_trip(tmp_path, arch):
    model = tiny_classifier(arch)
    surgery.prune_heads(model, {("encoder", 0, "self"): [0, 2], ("encoder", 1, "self"): [3]})
    save_model(model, tmp_path / "m")
    result = export_onnx(tmp_path / "m", tmp_path / "onnx")
    assert result["kind"] == "classifier" and result["opset"] == 18
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if arch == "bert" else [])
    assert result["inputs"]["model"] == names
    assert result["max_abs_diff"] <= 1e-4
    assert json.loads((tmp_path / "onnx" / "export.json").read_text())["files"] == {"model": "model.onnx"}
    # an independent check at a third shape (batch 3 × 11, padded rows) against the reloaded model
    loaded, _ = load_model(tmp_path / "m")
    session = ort_session(result["files"]["model"])
    assert [i.shape for i in session.get_inputs()][0] == ["batch", "sequence"]
    inputs = {**batch(), "token_type_ids": torch.zeros(3, 11, dtype=torch.long)}
    inputs = {name: inputs[name] for name in names}
    actual = session.run(None, {k: v.numpy() for k, v in inputs.items()})[0]
    with torch.no_grad():
        assert max_abs_difference(loaded(**inputs).logits, actual) <= 1e-4


def tiny_t5():
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=50, d_model=16, d_kv=4, d_ff=24, num_layers=2, num_decoder_layers=3,
                                   num_heads=4, relative_attention_num_buckets=8, dropout_rate=0.0,
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = transformers.T5ForConditionalGeneration(config).eval()
    surgery.prune_heads(model, {("encoder", 1, "self"): [0, 3], ("decoder", 0, "cross"): [1]})
    surgery.drop_layers(model, "decoder", [0, 2])
    return model


def test_t5_encoder_decoder_round_trip_and_greedy_generation(tmp_path):
    model = tiny_t5()
    result = export_onnx(model, tmp_path / "onnx")
    assert result["kind"] == "seq2seq" and set(result["files"]) == {"encoder", "decoder"}
    assert result["per_graph"]["encoder"] <= 1e-4 and result["per_graph"]["decoder"] <= 1e-4
    encoder, decoder = ort_session(result["files"]["encoder"]), ort_session(result["files"]["decoder"])
    ids = torch.randint(3, 50, (2, 7), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0
    tokens = onnx_greedy_generate(encoder, decoder, ids.numpy(), mask.numpy(), decoder_start_token_id=0,
                                  eos_token_id=None, max_new_tokens=5)
    with torch.no_grad():
        expected = model.generate(input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                                  max_new_tokens=5, min_new_tokens=5)
    np.testing.assert_array_equal(tokens, expected.numpy())


@pytest.mark.parametrize("kind", ["bart", "bert2bert"])
def test_other_encoder_decoders_round_trip(tmp_path, kind):
    from test_seq2seq_adapters import tiny

    model = tiny(kind)
    surgery.prune_heads(model, {("encoder", 0, "self"): [1, 2], ("decoder", 1, "cross"): [0]})
    surgery.prune_ffn(model, {("decoder", 2, "ffn"): list(range(7))})
    surgery.drop_layers(model, "decoder", [1, 2])
    result = export_onnx(model, tmp_path / "onnx")
    assert result["kind"] == "seq2seq" and result["max_abs_diff"] <= 1e-4


def test_export_rejects_foreign_input(tmp_path):
    with pytest.raises(ConfigError, match="not a model folder written by forgetless"):
        export_onnx(tmp_path, tmp_path / "out")


def test_unexportable_graph_is_named(tmp_path):
    from forgetless.errors import UnsupportedModelError
    from forgetless.export import _export

    class DataDependent(torch.nn.Module):
        def forward(self, input_ids, attention_mask):
            return input_ids * 2 if input_ids.sum() > 3 else input_ids

    ids = torch.ones(2, 3, dtype=torch.long)
    axes = {name: {0: "batch", 1: "sequence"} for name in ("input_ids", "attention_mask")}
    with pytest.raises(UnsupportedModelError, match="could not export model.onnx of DataDependent: <class"):
        _export(DataDependent(), (ids, ids), ["input_ids", "attention_mask"], "y", axes, tmp_path / "model.onnx", 18)


def test_push_to_hub_fails_fast_offline(tmp_path, monkeypatch):
    save_model(tiny_classifier("bert"), tmp_path / "m")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ForgetlessError, match="HF_HUB_OFFLINE is set"):
        push_to_hub(tmp_path / "m", "someone/model")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(ForgetlessError, match="not reachable"):
        push_to_hub(tmp_path / "m", "someone/model")


def test_the_exports_readme_snippet_runs(tmp_path, minilm_tokenizer):
    """The README written beside the graph shows onnxruntime code; run it as written (path filled in)."""
    from forgetless.models.tiny import tiny_classifier as tiny

    save_model(tiny("tiny-bert", len(minilm_tokenizer), ["neg", "pos"]), tmp_path / "m", minilm_tokenizer)
    export_onnx(tmp_path / "m", tmp_path / "onnx")
    readme = (tmp_path / "onnx" / "README.md").read_text()
    assert "checked with onnxruntime against pytorch" in readme.lower()
    code = readme.split("```python\n")[1].split("```")[0].replace("path/to/this/folder", str(tmp_path / "onnx"))
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the snippet this package wrote
    assert namespace["logits"].shape == (1, 2)
