"""Seq2seq tasks, metrics and the end-to-end NASH / CoFi-style runs on tiny models."""
import os
from pathlib import Path

import pytest
import torch

from forgetless.errors import ConfigError, DataError
from forgetless.models import io
from forgetless.seq2seq import metrics
from forgetless.seq2seq.data import Seq2SeqCollator, encode_pairs, load_task, synthetic_task
from forgetless.seq2seq.pipeline import run_compress, run_profile

DATA = Path(os.environ.get("FORGETLESS_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_synthetic_task_is_seeded_and_answerable():
    a, b = synthetic_task(50, 10, seed=3), synthetic_task(50, 10, seed=3)
    assert a.train.sources == b.train.sources and a.dev.references == b.dev.references
    assert synthetic_task(50, 10, seed=4).train.sources != a.train.sources
    src, ref = a.train.sources[0], a.train.references[0][0]
    asked = src.split()[1]
    assert f"{asked} has {ref} ." in src  # the answer is the asked entity's two attributes
    tok = a.tokenizer
    rows = encode_pairs(a.train, tok, tok.sep_token_id, 64, 8)
    assert rows[0]["labels"][-1] == tok.sep_token_id and tok.unk_token_id not in rows[0]["input_ids"]
    batch = Seq2SeqCollator(tok.pad_token_id)(rows[:4])
    assert batch["labels"].shape[1] == 3 and (batch["labels"] != -100).sum() == 12


def test_real_loaders_and_errors(tmp_path):
    with pytest.raises(ConfigError):
        load_task("tweetqa")
    with pytest.raises(DataError):
        load_task("tweetqa", data_dir=tmp_path / "missing")
    with pytest.raises(ConfigError):
        load_task("squad")
    if not (DATA / "tweetqa" / "dev.json").is_file():
        pytest.skip("shared data folder not present")
    task = load_task("tweetqa", DATA, n_train=20, n_dev=10, eval_sets=("samsum", "xsum"))
    assert len(task.train) == 20 and len(task.dev) == 10 and task.dev.sources[0].startswith("question: ")
    assert set(task.extra) == {"samsum", "xsum"} and len(task.extra["xsum"]) == 10
    assert load_task("samsum", DATA).protocol.startswith("samsum: seeded")


def test_rouge_and_meteor_values():
    scores = metrics.generation_scores(["the cat sat"], [["the cat sat"]])
    assert scores["rouge1"] == pytest.approx(100.0) and scores["rougeL"] == pytest.approx(100.0)
    assert scores["meteor"] > 90.0
    # best of several references counts
    assert metrics.rouge(["red"], [["blue", "red"]])["rouge1"] == pytest.approx(100.0)
    # ROUGE-1 F1 of "a b" against "a c": P = R = 1/2
    assert metrics.rouge(["a b"], [["a c"]])["rouge1"] == pytest.approx(50.0)
    assert metrics.meteor_stages() in ("exact+stem", "exact+stem+synonym")


def test_nash_end_to_end_tiny_t5(tmp_path):
    report = run_compress("nash", model="tiny-t5", task="synthetic", output_dir=tmp_path / "nash", n_train=48,
                          n_dev=8, teacher_epochs=1, prune_epochs=1, finetune_epochs=1, batch_size=16,
                          learning_rate=1e-3, decoder_layers=2, encoder_sparsity=0.3, max_new_tokens=6,
                          speed_new_tokens=4, speed_repeats=1, speed_batch_size=2)
    row = report["models"]["nash"]
    assert report["masked_equals_sliced"] is True
    assert row["layers"] == {"encoder": 4, "decoder": 2} and row["kept_layers"]["decoder"] == [0, 3]
    assert row["sparsity"] >= 0.3 - 1e-6
    assert row["params"] < report["models"]["teacher"]["params"]
    assert {"rougeL", "meteor"} <= set(row["eval"]["dev"]) and row["speedup"] > 0
    assert (tmp_path / "nash" / "report.md").read_text().count("|") > 20
    model, tokenizer = io.load_model(tmp_path / "nash" / "model")
    assert model.config.num_decoder_layers == 2 and tokenizer is not None


def test_cofi_end_to_end_tiny_bart_and_profile(tmp_path):
    report = run_compress("cofi", model="tiny-bart", task="synthetic", output_dir=tmp_path / "cofi", n_train=32,
                          n_dev=8, teacher_epochs=1, prune_epochs=1, finetune_epochs=0, batch_size=16,
                          learning_rate=1e-3, sparsity=0.5, max_new_tokens=6, speed_new_tokens=4, speed_repeats=1,
                          speed_batch_size=2)
    row = report["models"]["cofi"]
    assert report["masked_equals_sliced"] is True and row["sparsity"] >= 0.5 - 1e-6
    assert row["layers"] == {"encoder": 4, "decoder": 4}
    with pytest.raises(ConfigError):
        run_compress("magic", model="tiny-bart", output_dir=tmp_path / "x")
    profile = run_profile("tiny-bart", tmp_path / "profile", compressed=str(tmp_path / "cofi" / "model"),
                          seq_lengths=(8, 16), head_fractions=(1.0, 0.5), ffn_fractions=(1.0,), batch_size=2,
                          max_new_tokens=4, source_length=8, repeats=1)
    assert len(profile["layer_profile"]) == 4 and {r["heads"] for r in profile["layer_profile"]} == {4, 2}
    share = profile["generation_share"]["base"]
    assert 0 < share["encoder_share"] < 1 and 0 < share["decoder_share"] < 1
    assert (tmp_path / "profile" / "profile.json").is_file()


def test_cli_arguments_compress_nash_tiny_bart(tmp_path, capsys):
    from forgetless.seq2seq.cli_args import main

    main(["compress", "--method", "nash", "--model", "tiny-bart", "--decoder-layers", "3", "--encoder-sparsity", "0.3",
          "--n-train", "32", "--n-dev", "4", "--teacher-epochs", "1", "--prune-epochs", "1", "--finetune-epochs", "0",
          "--max-new-tokens", "4", "--speed-repeats", "1", "--speed-batch-size", "2", "--speed-new-tokens", "2",
          "--learning-rate", "1e-3", "--output-dir", str(tmp_path / "cli")])
    assert "masked == sliced: True" in capsys.readouterr().out
    model, _ = io.load_model(tmp_path / "cli" / "model")
    assert model.config.decoder_layers == 3 and model.config.encoder_layers == 4
