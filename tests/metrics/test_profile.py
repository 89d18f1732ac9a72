"""NASH Figure 3 / Finding 3.1 profile: encoder layer and decoding-step rows (target length 1 with a
cache) per width, generation shares, profile.md and profile.png, for T5, BART and bert2bert shapes."""
import pytest
import torch

from forgetless.metrics.profile import decoder_step_profile, run_profile
from forgetless.report.profile import write_profile_report
from forgetless.models.loading import load_seq2seq

torch.set_num_threads(1)


@pytest.mark.parametrize("name", ["tiny-t5", "tiny-bart", "tiny-bert2bert"])
def test_decoder_step_rows_per_width(name):
    model, _ = load_seq2seq(name, seed=0)
    rows = decoder_step_profile(model.eval(), seq_lengths=(8, 32), head_fractions=(1.0, 0.5), ffn_fractions=(1.0, 0.25),
                                batch_size=2, repeats=2)
    assert len(rows) == 2 * 2 * 2
    assert {(r["heads"], r["ffn"]) for r in rows} == {(4, 64), (2, 64), (4, 16), (2, 16)}
    assert all(r["stack"] == "decoder-step" and 0 < r["ms"] < r["step_ms"] for r in rows)
    assert all(r["decoder_layers"] == 4 for r in rows)


def test_profile_writes_markdown_and_png(tmp_path):
    model, tokenizer = load_seq2seq("tiny-t5", seed=0)
    result = run_profile(model, tokenizer, tmp_path, seq_lengths=(8, 16), head_fractions=(1.0, 0.5), ffn_fractions=(1.0,),
                         batch_size=2, max_new_tokens=3, source_length=8, repeats=1)
    write_profile_report(result, tmp_path)
    stacks = [r["stack"] for r in result["layer_profile"]]
    assert stacks.count("encoder") == 4 and stacks.count("decoder-step") == 4
    text = (tmp_path / "profile.md").read_text()
    assert "Decoding step (target length 1, with a cache)" in text and "| base |" in text
    assert (tmp_path / "profile.png").stat().st_size > 1000 and (tmp_path / "profile.json").is_file()
