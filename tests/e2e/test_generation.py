"""Generation through the one pipeline: tasks, encoding, metrics, text-to-text classification, NASH
and CoFi end to end on tiny encoder-decoders (compress → report card → reload), the profile, the CLI."""
import json

import numpy as np
import pytest

from forgetless.cli import main
from forgetless.data.tasks import load_task
from forgetless.errors import ConfigError, DataError
from forgetless.metrics import generation as metrics
from forgetless.metrics.speed import SpeedConfig
from forgetless.kinds.seq2seq import label_word, parse_labels
from forgetless.models import io
from forgetless.config import EvalConfig
from forgetless.config import RunConfig
from forgetless.methods.nash.config import CofiConfig, NashConfig
from forgetless.pipeline import run_and_save
from forgetless.report.card_types import Card
from forgetless.training.encode import collate, encode_pairs
from forgetless.training.trainer import TrainConfig


pytestmark = pytest.mark.usefixtures("one_thread")


def _run(**overrides):
    base = dict(train=TrainConfig(epochs=1, batch_size=16, learning_rate=1e-3, progress=False),
                eval=EvalConfig(max_new_tokens=6), progress=False,
                speed=SpeedConfig(batch_size=2, seq_len=16, repeats=1, warmup=0, new_tokens=4))
    return RunConfig(**{**base, **overrides})


def test_lookup_task_is_seeded_answerable_and_encoded():
    a, b = load_task("synthetic-lookup", seed=3, train_size=50), load_task("synthetic-lookup", seed=3, train_size=50)
    assert a.kind == "generation" and a.train.sources == b.train.sources and a.dev.references == b.dev.references
    assert load_task("synthetic-lookup", seed=4, train_size=50).train.sources != a.train.sources
    assert len(a.train) == 50 and len(load_task("synthetic-lookup", eval_size=7).dev) == 7
    src, ref = a.train.sources[0], a.train.references[0][0]
    assert f"{src.split()[1]} has {ref} ." in src  # the answer is the asked entity's two attributes
    tok = a.tokenizer
    rows = encode_pairs(a.train, tok, tok.sep_token_id, 64, 8)
    assert rows[0]["labels"][-1] == tok.sep_token_id and tok.unk_token_id not in rows[0]["input_ids"]
    batch = collate(rows[:4], tok.pad_token_id)
    assert batch["labels"].shape[1] == 3 and (batch["labels"] != -100).sum() == 12


def test_real_loaders_and_errors(tmp_path, shared_data):
    with pytest.raises(DataError, match="data_dir="):
        load_task("tweetqa")
    with pytest.raises(DataError, match="does not exist"):
        load_task("tweetqa", data_dir=str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match="unknown evaluation set"):
        load_task("tweetqa", data_dir=shared_data, eval_sets=("squad",))
    task = load_task("tweetqa", data_dir=shared_data, train_size=20, eval_size=10, eval_sets=("samsum", "xsum"))
    assert len(task.train) == 20 and len(task.dev) == 10 and task.dev.sources[0].startswith("question: ")
    assert set(task.challenges) == {"samsum", "xsum"} and len(task.challenges["xsum"]) == 10
    assert load_task("samsum", data_dir=shared_data).protocol.startswith("samsum: seeded")


def test_rouge_and_meteor_values():
    scores = metrics.score_texts(["the cat sat"], [["the cat sat"]])
    assert scores["rouge1"] == pytest.approx(100.0) and scores["rougeL"] == pytest.approx(100.0)
    assert scores["meteor"] > 90.0
    assert metrics.rouge(["red"], [["blue", "red"]])["rouge1"] == pytest.approx(100.0)  # best reference
    assert metrics.rouge(["a b"], [["a c"]])["rouge1"] == pytest.approx(50.0)  # P = R = 1/2
    assert metrics.meteor_stages() in ("exact+stem", "exact+stem+synonym")


def test_text_to_text_label_words_and_unknown_generations():
    names = ["entailment", "not_entailment"]
    assert [label_word(n) for n in names] == ["entailment", "not entailment"]
    parsed = parse_labels(["Entailment", " not  entailment ", "maybe", ""], names)
    assert parsed.tolist() == [0, 1, -1, -1]
    from forgetless.data.task import ExampleSet
    from forgetless.metrics.accuracy import set_metrics

    dev = ExampleSet("dev", ["a"] * 4, [0, 1, 1, 0], names)
    m = set_metrics(dev, np.array(parsed))
    assert m["accuracy"] == 0.5 and m["unknown_share"] == 0.5  # unknown texts count as wrong


def test_nash_end_to_end_tiny_t5(tmp_path):
    task = load_task("synthetic-lookup", train_size=48, eval_size=8)
    card = run_and_save(task, _run(model="tiny-t5", method=NashConfig(decoder_layers=2, encoder_sparsity=0.3)),
                        tmp_path / "nash").card.to_json()
    Card.from_json(card)
    assert card["kind"] == {"task": "generation", "model": "seq2seq"} and card["method"]["objective"] == "nash-distil"
    assert card["speed"]["mode"] == "generate" and card["bias"] is None and card["headline"]["metric"] == "rougeL"
    manifest = io.read_manifest(tmp_path / "nash" / "model")
    artifacts = manifest["metadata"]["artifacts"]
    assert artifacts["masked_equals_sliced"] is True and artifacts["kept_layers"]["decoder"] == [0, 3]
    assert artifacts["achieved_sparsity"] >= 0.3 - 1e-6
    assert card["params"]["compressed"]["total"] < card["params"]["base"]["total"]
    assert {"rougeL", "meteor"} <= set(card["sets"]["dev"]["compressed"])
    assert "Generation quality" in (tmp_path / "nash" / "report.md").read_text()
    model, tokenizer = io.load_model(tmp_path / "nash" / "model")
    assert model.config.num_decoder_layers == 2 and tokenizer is not None


def test_cofi_text_to_text_classification_tiny_bart_and_profile(tmp_path):
    from forgetless.metrics.profile import run_profile

    task = load_task("synthetic", train_size=32, eval_size=8)
    card = run_and_save(task, _run(model="tiny-bart", method=CofiConfig(sparsity=0.5, finetune_epochs=0)),
                        tmp_path / "cofi").card.to_json()
    Card.from_json(card)
    assert card["kind"] == {"task": "classification", "model": "seq2seq"}
    assert card["hard_easy"] is not None and "accuracy" in card["sets"]["challenge"]["compressed"]
    artifacts = io.read_manifest(tmp_path / "cofi" / "model")["metadata"]["artifacts"]
    assert artifacts["achieved_sparsity"] >= 0.5 - 1e-6 and artifacts["masked_equals_sliced"] is True
    with pytest.raises(ConfigError, match="does not apply"):
        run_and_save(task, _run(model="tiny-bart", method="cofi", objective="rmc"), tmp_path / "x")
    model, tokenizer = io.load_model(tmp_path / "cofi" / "model")
    profile = run_profile(model, tokenizer, tmp_path / "profile", compressed=(model, tokenizer), seq_lengths=(8, 16),
                          head_fractions=(1.0, 0.5), ffn_fractions=(1.0,), batch_size=2, max_new_tokens=4,
                          source_length=8, repeats=1)
    assert len([r for r in profile["layer_profile"] if r["stack"] == "encoder"]) == 4
    share = profile["generation_share"]["base"]
    assert 0 < share["encoder_share"] < 1 and 0 < share["decoder_share"] < 1


def test_cli_compress_nash_and_sweep_over_decoder_depth(tmp_path, capsys):
    common = ["--model", "tiny-t5", "--task", "synthetic-lookup", "--train-size", "32", "--eval-size", "8",
              "--epochs", "1", "--lr", "1e-3", "--batch-size", "16", "--max-new-tokens", "4", "--no-progress"]
    code = main(["compress", "--method", "nash", "--decoder-layers", "3", "--objective", "nash-distil",
                 "--objective-temperature", "2", "--bench-repeats", "1", "--bench-batch-size", "2",
                 "--bench-seq-len", "8", "--bench-new-tokens", "2", "--out", str(tmp_path / "cli"), *common])
    assert code == 0
    card = json.loads((tmp_path / "cli" / "report.json").read_text())
    assert card["method"]["objective_options"]["temperature"] == 2.0 and card["method"]["config"]["decoder_layers"] == 3
    model, _ = io.load_model(tmp_path / "cli" / "model")
    assert model.config.num_decoder_layers == 3
    code = main(["sweep", "--method", "nash", "--objectives", "nash-distil", "--level-option", "decoder_layers",
                 "--levels", "1,2", "--finetune-epochs", "0", "--encoder-sparsity", "0", "--out", str(tmp_path / "sw"),
                 *common])
    assert code == 0
    summary = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert [row["level"] for row in summary["rows"]] == [1, 2] and "decoder_layers" in capsys.readouterr().out
