"""The Python API (issue 19): in-memory models and 🤗 datasets in, a compressed model object and a
validated card out; nothing written outside a temporary folder without ``out_dir``; wrong types
are one clear error before any work; ``Task.from_datasets`` label names and columns."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import datasets
import pytest
import torch
import transformers

import forgetless
from forgetless.data.task import Task
from forgetless.errors import ConfigError, DataError, ForgetlessError, OutputFolderError
from forgetless.data.generation import SPECIALS, word_tokenizer
from forgetless.methods.nash.config import NashConfig
from forgetless.methods.truncate.config import TruncateConfig
from forgetless.models.tiny import tiny_seq2seq
from forgetless.report.card_types import Card

FAST = dict(train={"epochs": 1, "batch_size": 16, "learning_rate": 1e-3, "max_length": 32, "progress": False},
            speed={"batch_size": 2, "seq_len": 16, "repeats": 1, "warmup": 0, "new_tokens": 4},
            eval={"meteor": False}, progress=False)
GENERATE = {**FAST, "eval": {"max_new_tokens": 4, "meteor": False}}  # --max-new-tokens: seq2seq models only
WORDS = {"neg": ["bad", "awful", "dull", "poor"], "pos": ["good", "great", "fine", "nice"]}
VOCAB = SPECIALS + sorted({"a", "movie", "film", "repeat", *WORDS["neg"], *WORDS["pos"]})


@pytest.fixture(scope="module")
def tok():
    """A small word-level tokenizer: tiny embeddings keep the runs fast."""
    return word_tokenizer(VOCAB)


def _classification_data(n_train: int = 32, n_dev: int = 12) -> datasets.DatasetDict:
    features = datasets.Features({"sentence": datasets.Value("string"),
                                  "label": datasets.ClassLabel(names=["neg", "pos"])})

    def rows(n, offset):
        labels = [(i + offset) % 2 for i in range(n)]
        texts = [f"a {WORDS[['neg', 'pos'][y]][i % 4]} movie" for i, y in enumerate(labels)]
        return datasets.Dataset.from_dict({"sentence": texts, "label": labels}, features=features)

    return datasets.DatasetDict({"train": rows(n_train, 0), "validation": rows(n_dev, 1), "test": rows(n_dev, 0)})


def _generation_data() -> datasets.DatasetDict:
    def rows(n):
        words = ["good", "bad", "movie", "film", "great", "dull"]  # in VOCAB
        sources = [f"repeat {words[i % 6]} {words[(i + 1) % 6]}" for i in range(n)]
        return datasets.Dataset.from_dict({"source": sources, "target": [s.split(" ", 1)[1] for s in sources]})

    return datasets.DatasetDict({"train": rows(24), "validation": rows(6)})


def _tiny_bert(tokenizer) -> transformers.BertForSequenceClassification:
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=37, num_labels=2,
                                     id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1})
    return transformers.BertForSequenceClassification(config).eval()


def _listing(folder: Path) -> set:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")} if folder.exists() else set()


@pytest.fixture
def private_tmp(tmp_path_factory, monkeypatch) -> Path:
    """``tempfile``'s folder for this test alone (other processes share the system one)."""
    folder = tmp_path_factory.mktemp("tempdir")
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _ours(folder: Path) -> list:
    """What forgetless left in a temporary folder (torch's own inductor cache aside)."""
    return [p.name for p in folder.iterdir() if not p.name.startswith("torchinductor")]


def _reload_and_compare(folder: Path, tokenizer, expected: torch.Tensor, tmp_path: Path) -> None:
    """The saved folder reloads in a fresh process and gives the same logits."""
    inputs = tokenizer(["a good movie", "a dull film"], return_tensors="pt", padding=True)
    torch.save(dict(inputs), tmp_path / "inputs.pt")
    script = ("import torch, forgetless\n"
              f"model, _ = forgetless.load_model({str(folder)!r})\n"
              f"inputs = torch.load({str(tmp_path / 'inputs.pt')!r})\n"
              "with torch.no_grad():\n"
              "    print(repr(model(**inputs).logits.flatten().tolist()))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(Path(forgetless.__file__).parents[1])})
    reloaded = torch.tensor(eval(out.stdout.strip().splitlines()[-1]))  # a list of floats we printed
    with torch.no_grad():
        assert torch.allclose(reloaded, expected(inputs).flatten(), atol=1e-5)


def test_compress_in_memory_bert_with_datasetdict(tmp_path, tok, forgetless_cache, monkeypatch,
                                                  private_tmp):
    monkeypatch.chdir(tmp_path)
    model = _tiny_bert(tok)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    cache_before, cwd_before = _listing(forgetless_cache), _listing(tmp_path)

    result = forgetless.compress(model=model, tokenizer=tok, data=_classification_data(),
                                 method=forgetless.METHODS.make_config("truncate", {"layers": 1}), **FAST)

    assert len(result.model.bert.encoder.layer) == 1 and len(model.bert.encoder.layer) == 2
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the user's object untouched
    card = result.card.to_json()
    assert Card.from_json(card) == result.card  # typed, and back from its JSON
    assert card["kind"] == {"task": "classification", "model": "classifier"}
    assert card["task"]["sizes"] == {"train": 32, "dev": 12, "test": 12} and card["challenge"]["sets"] == ["test"]
    assert card["method"]["name"] == "truncate" and card["method"]["config"]["layers"] == 1
    assert card["model"]["compressed"].startswith("in-memory BertForSequenceClassification sha256:")
    assert card["params"]["compressed"]["total"] < card["params"]["base"]["total"]
    assert card["training"]["base_epochs"] == 1.0
    assert _listing(forgetless_cache) == cache_before and _listing(tmp_path) == cwd_before  # nothing written
    assert _ours(private_tmp) == []  # the temporary work folder is gone

    saved = result.save(tmp_path / "saved")  # every output, as `forgetless compress` writes them
    assert {"report.json", "report.md", "report.html", "predictions.jsonl", "forgetless-run.json"} <= \
        {p.name for p in saved.iterdir()} and (saved / "model" / "README.md").is_file()
    assert json.loads((saved / "report.json").read_text())["params"]["compressed"]["disk_bytes"] > 0
    _reload_and_compare(saved / "model", tok, lambda inputs: result.model(**inputs).logits, tmp_path)
    with pytest.raises(OutputFolderError, match="not an empty folder"):
        result.save(saved)

    scores = forgetless.evaluate(result.model, _classification_data(), tokenizer=tok)
    assert scores.sets["dev"]["accuracy"] == pytest.approx(card["sets"]["dev"]["compressed"]["accuracy"])
    assert forgetless.evaluate(saved / "model", _classification_data()).sets["dev"]["n"] == 12


def test_compress_in_memory_t5_on_generation_data(tmp_path, tok, forgetless_cache):
    model = tiny_seq2seq("tiny-t5", len(tok), pad=tok.pad_token_id, bos=tok.cls_token_id, eos=tok.sep_token_id)
    cache_before = _listing(forgetless_cache)
    result = forgetless.compress(model, _generation_data(), NashConfig(decoder_layers=2, encoder_pruning="none",
                                                                         finetune_epochs=0),
                                 tokenizer=tok, out_dir=tmp_path / "run",
                                 base="as-is", **GENERATE)
    assert result.card.kind.task == "generation" and result.card.kind.model == "seq2seq"
    assert result.model.config.num_decoder_layers == 2 and model.config.num_decoder_layers == 4
    assert (tmp_path / "run" / "report.json").is_file() and (tmp_path / "run" / "model").is_dir()
    assert result.card.params.base["source"]["as_is"] and result.card.training.base == "as-is"
    assert _listing(forgetless_cache) == cache_before  # nothing of an in-memory model goes to the cache
    saved = result.save(tmp_path / "saved")
    ids = tok(["repeat good bad"], return_tensors="pt")

    def logits(inputs):
        start = torch.full((1, 1), result.model.config.decoder_start_token_id)
        return result.model(**inputs, decoder_input_ids=start).logits

    reloaded, _ = forgetless.load_model(saved / "model")
    start = torch.full((1, 1), model.config.decoder_start_token_id)
    with torch.no_grad():
        assert torch.allclose(reloaded(**ids, decoder_input_ids=start).logits, logits(ids), atol=1e-6)


@pytest.mark.parametrize("call, culprit", [
    (lambda m, t, d: forgetless.compress(m, 42, "truncate", tokenizer=t), "data: expected"),
    (lambda m, t, d: forgetless.compress(3.5, d, "truncate", tokenizer=t), "model: expected"),
    (lambda m, t, d: forgetless.compress(m, d, 7, tokenizer=t), "method: expected a name or a config"),
    (lambda m, t, d: forgetless.compress(m, d, "truncate", tokenizer="bert"), "tokenizer: expected"),
    (lambda m, t, d: forgetless.compress(m, d, "truncate", tokenizer=t, epochs=1), "unknown option"),
    (lambda m, t, d: forgetless.compress(m, d, "truncate", tokenizer=t, columns={"text": "review"}),
     "no column 'review'"),
    (lambda m, t, d: forgetless.compress(m, {"train": d["train"]}, "truncate", tokenizer=t), "'validation'"),
    (lambda m, t, d: forgetless.compress(m, d, TruncateConfig(layers=2), tokenizer=t), "^layers=2: "),
    (lambda m, t, d: forgetless.compress(m, d, "truncate"), "tokenizer: none given"),
    (lambda m, t, d: forgetless.compress("tiny-bert", d, "truncate", tokenizer=t), "its own tokenizer"),
    (lambda m, t, d: forgetless.evaluate(m, [1, 2], tokenizer=t), "data: expected"),
])
def test_wrong_types_are_one_clear_error_before_any_work(call, culprit, tok, tmp_path, monkeypatch,
                                                        private_tmp):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ForgetlessError, match=culprit):
        call(_tiny_bert(tok), tok, _classification_data(8, 4))
    assert not any(tmp_path.iterdir()) and _ours(private_tmp) == []


def test_from_datasets_label_names_columns_and_caps():
    plain = datasets.Dataset.from_dict({"text": ["x y", "y z", "z x", "x x"], "label": ["pos", "neg", "pos", "neg"]})
    task = Task.from_datasets(plain, plain, {"hard": plain})
    assert task.label_names == ["neg", "pos"] and task.train.labels == [1, 0, 1, 0]  # sorted distinct strings
    assert list(task.challenges) == ["hard"] and task.kind == "classification"
    named = Task.from_datasets(_classification_data(), text="sentence", train_size=10, eval_size=4, seed=3)
    assert named.label_names == ["neg", "pos"] and len(named.train) == 10 and len(named.dev) == 4
    assert sorted(named.train.labels) == [0] * 5 + [1] * 5  # the stratified seeded cap of load_task
    pairs = datasets.Dataset.from_dict({"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [0, 1]})
    pair_task = Task.from_datasets(pairs, pairs, labels=["yes", "no"])
    assert pair_task.train.text_b == ["c", "d"] and pair_task.label_names == ["yes", "no"]
    generation = Task.from_datasets(_generation_data())
    assert generation.kind == "generation" and generation.train.references[0] == ["good bad"]
    with pytest.raises(DataError, match="label ids without names"):
        Task.from_datasets(pairs, pairs)
    unlabelled = datasets.Dataset.from_dict({"text": ["a"], "label": [-1]},
                                            features=datasets.Features({"text": datasets.Value("string"),
                                                                        "label": datasets.ClassLabel(names=["n", "p"])}))
    with pytest.raises(DataError, match="row 1 is unlabelled"):
        Task.from_datasets(unlabelled, unlabelled)
    with pytest.raises(DataError, match="dev must be a datasets.Dataset"):
        Task.from_datasets(plain, [1])
    with pytest.raises(ConfigError):
        forgetless.compress("tiny-bert", plain, "truncate")  # a single Dataset is not a DatasetDict


def test_in_memory_model_checks_and_tokenizer_from_name_or_path(tmp_path, tok):
    from forgetless.kinds import KINDS
    from forgetless.kinds.in_memory import find_tokenizer

    task = Task.from_datasets(_classification_data(8, 4))
    model = _tiny_bert(tok)
    model.save_pretrained(tmp_path / "bert")
    tok.save_pretrained(tmp_path / "bert")
    reloaded = transformers.BertForSequenceClassification.from_pretrained(tmp_path / "bert", use_safetensors=True)
    assert find_tokenizer(reloaded, None, task).convert_ids_to_tokens(5) == tok.convert_ids_to_tokens(5)
    copied, _ = KINDS["classifier"].load_model(reloaded, task, tokenizer=tok)
    assert copied is not reloaded and torch.equal(copied.classifier.weight, reloaded.classifier.weight)
    with pytest.raises(ForgetlessError, match="no ForSequenceClassification head"):
        KINDS["classifier"].load_model(transformers.BertModel(model.config), task, tokenizer=tok)
    with pytest.raises(ForgetlessError, match="not an encoder-decoder"):
        KINDS["seq2seq"].load_model(model, task, tokenizer=tok)
    three = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        num_labels=3))
    with pytest.raises(ForgetlessError, match="predicts 3 labels, the task has 2"):
        forgetless.compress(three, _classification_data(8, 4), TruncateConfig(layers=1), tokenizer=tok,
                            out_dir=tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_every_method_and_objective_config_is_importable_from_forgetless():
    for registry in (forgetless.METHODS, forgetless.OBJECTIVES):
        for name in registry.names():
            cls = registry.config_class(name)
            if cls is not None:
                assert getattr(forgetless, cls.__name__) is cls and cls.__name__ in dir(forgetless)
    assert {"apply", "apply_streamed", "evaluate", "compress", "Run", "Task", "Card", "Comparison", "Scores"} <= \
        set(forgetless.__all__)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchConfig'"):
        forgetless.NoSuchConfig
