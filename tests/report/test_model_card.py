"""Model cards (one writer: ``report/model_card.py``) and stock loading: a uniform model loads with
stock ``from_pretrained`` and gives the same outputs; an uneven one gets a card that warns; the
README parses as a Hugging Face card."""
import json

import pytest
import torch
import transformers
from conftest import batch, tiny_classifier
from huggingface_hub import ModelCard

from forgetless.errors import ConfigError
from forgetless.models import surgery
from forgetless.models.io import load_model, read_manifest, save_model
from forgetless.report.model_card import shapes_are_uniform, write_model_card
from forgetless.models.stock import stock_loadable

WARNING = "Warning: stock `from_pretrained` cannot rebuild this model"


pytestmark = pytest.mark.usefixtures("one_thread")


def stock_logits(path, inputs):
    stock = transformers.AutoModelForSequenceClassification.from_pretrained(path, use_safetensors=True).eval()
    with torch.no_grad():
        return stock(**inputs).logits


def test_truncated_bert_loads_with_stock_from_pretrained(tmp_path):
    model = surgery.drop_layers(tiny_classifier("bert"), "encoder", [0, 2])
    assert model.config.num_hidden_layers == 2  # surgery updated the layer count
    save_model(model, tmp_path / "m")
    inputs = batch()
    with torch.no_grad():
        expected = model(**inputs).logits
    torch.testing.assert_close(stock_logits(tmp_path / "m", inputs), expected, atol=0, rtol=0)
    assert stock_loadable(tmp_path / "m") == (True, "config.json describes every layer exactly")
    assert not (tmp_path / "m" / "README.md").exists()  # save_model writes no card: report/model_card.py does
    card = write_model_card(tmp_path / "m").read_text()  # without a run's summary: shapes and how to load
    assert WARNING not in card and "BertForSequenceClassification.from_pretrained(" in card
    assert 'transformers.pipeline("text-classification", model="path/to/this/folder"' in card
    assert shapes_are_uniform(tmp_path / "m")


def test_uniform_ffn_width_is_written_to_config(tmp_path):
    model = tiny_classifier("bert")
    surgery.prune_ffn(model, {("encoder", i, "ffn"): [i, 5, 9, 30, 36] for i in range(3)})
    save_model(model, tmp_path / "m")
    assert json.loads((tmp_path / "m" / "config.json").read_text())["intermediate_size"] == 5
    assert model.config.intermediate_size == 37  # the in-memory model's config is left alone
    inputs = batch()
    with torch.no_grad():
        expected = model(**inputs).logits
    torch.testing.assert_close(stock_logits(tmp_path / "m", inputs), expected, atol=0, rtol=0)
    reloaded, _ = load_model(tmp_path / "m")  # the forgetless loader still agrees
    assert surgery.model_shape(reloaded) == surgery.model_shape(model)
    # uneven widths: config keeps the original width and stock loading is refused
    surgery.prune_ffn(model, {("encoder", 0, "ffn"): [0, 1]})
    save_model(model, tmp_path / "uneven")
    assert json.loads((tmp_path / "uneven" / "config.json").read_text())["intermediate_size"] == 37
    assert stock_loadable(tmp_path / "uneven") == (False, "FFN widths differ between layers or from config.json")


def test_t5_with_dropped_decoder_layers_and_uniform_ffn_loads_with_stock(tmp_path):
    torch.manual_seed(0)
    config = transformers.T5Config(vocab_size=50, d_model=16, d_kv=4, d_ff=24, num_layers=2, num_decoder_layers=3,
                                   num_heads=4, relative_attention_num_buckets=8, dropout_rate=0.0,
                                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    model = transformers.T5ForConditionalGeneration(config).eval()
    surgery.drop_layers(model, "decoder", [1, 2])  # layer 0 (owner of the position bias) is dropped
    surgery.prune_ffn(model, {(stack, i, "ffn"): list(range(0, 24, 2)) for stack in ("encoder", "decoder")
                              for i in range(2)})
    save_model(model, tmp_path / "t5")
    assert stock_loadable(tmp_path / "t5")[0]
    stock = transformers.AutoModelForSeq2SeqLM.from_pretrained(tmp_path / "t5", use_safetensors=True).eval()
    ids = torch.randint(3, 50, (2, 7), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(stock(input_ids=ids, decoder_input_ids=ids[:, :4]).logits,
                                   model(input_ids=ids, decoder_input_ids=ids[:, :4]).logits, atol=0, rtol=0)


def test_head_pruned_card_warns_and_parses(tmp_path):
    model = tiny_classifier("bert")
    surgery.prune_heads(model, {("encoder", 0, "self"): [0, 2], ("encoder", 2, "self"): [3]})
    save_model(model, tmp_path / "m")
    assert not shapes_are_uniform(tmp_path / "m")
    assert not shapes_are_uniform(read_manifest(tmp_path / "m"))
    with pytest.raises(Exception, match="(?i)mismatch"):  # what the card warns about
        stock_logits(tmp_path / "m", batch())
    summary = {"base_model": "sentence-transformers/all-MiniLM-L6-v2", "method": "heads",
               "method_options": {"ratio": 0.25}, "objective": "ce", "task": "synthetic",
               "metrics": [{"set": "dev", "n": 400, "base": 0.9125, "compressed": 0.8875,
                            "compressed_interval": [0.855, 0.92]},
                           {"set": "challenge", "n": 1000, "base": 0.61, "compressed": None}],
               "size": {"parameters_base": 58_311, "parameters_compressed": 55_000},
               "speed": {"throughput_speedup": 1.07, "measurable": False},
               "warnings": ["base model on challenge: accuracy near chance"]}
    path = write_model_card(tmp_path / "m", summary)
    text = path.read_text()
    assert WARNING in text and "Attention heads were removed" in text
    assert "| dev | accuracy | 400 | 0.9125 | 0.8875 [0.8550, 0.9200] | -0.0250 |" in text
    assert "| challenge | accuracy | 1,000 | 0.6100 | – | – |" in text
    assert "| encoder | 2 | 1 | – | 37 |" in text  # layer 2 kept one head
    assert "- base model on challenge: accuracy near chance" in text
    card = ModelCard.load(path)
    data = card.data.to_dict()
    assert data["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert data["pipeline_tag"] == "text-classification" and "heads" in data["tags"]
    assert data["forgetless"]["stock_loadable"] is False and data["forgetless"]["shapes_uniform"] is False
    assert [(r.dataset_split, r.metric_value) for r in card.data.eval_results] == [("dev", 0.8875)]
    with pytest.raises(ConfigError, match="unknown key.*metric_table"):
        write_model_card(tmp_path / "m", {"metric_table": []})
    with pytest.raises(ConfigError, match="no forgetless.json"):
        write_model_card(tmp_path, {})


def test_card_names_the_hub_id_of_the_base_model(tmp_path):
    """The card says where the model came from: a short name's hub model, a hub id as given, or a
    folder's config ``_name_or_path`` of the form owner/name; tiny test models and unnamed folders
    get no link (and no ``base_model`` in the YAML)."""
    from forgetless.report.model_card import base_hub_id

    assert base_hub_id("minilm") == "sentence-transformers/all-MiniLM-L6-v2"
    assert base_hub_id("smollm2") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert base_hub_id("google-bert/bert-base-uncased") == "google-bert/bert-base-uncased"
    assert base_hub_id("tiny-bert") is None and base_hub_id(None) is None
    named, unnamed, local = tmp_path / "named", tmp_path / "unnamed", tmp_path / "local"
    for folder, name in ((named, "acme/bert-sst2"), (unnamed, None), (local, str(tmp_path))):
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"model_type": "bert", "_name_or_path": name}))
    assert base_hub_id(str(named)) == "acme/bert-sst2"
    assert base_hub_id(str(unnamed)) is None and base_hub_id(str(local)) is None  # a path is not a hub id
    assert base_hub_id(str(tmp_path / "missing")) is None  # an absolute path that does not exist either
    (tmp_path / "no-config").mkdir()
    assert base_hub_id(str(tmp_path / "no-config")) is None

    save_model(tiny_classifier("bert"), tmp_path / "m")
    text = write_model_card(tmp_path / "m", {"base_model": "minilm", "method": "truncate"}).read_text()
    assert ("Compressed from [`sentence-transformers/all-MiniLM-L6-v2`]"
            "(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2).") in text
    assert 'model, tokenizer = forgetless.load_model("path/to/this/folder")' in text
    assert ModelCard.load(tmp_path / "m" / "README.md").data.to_dict()["base_model"] == \
        "sentence-transformers/all-MiniLM-L6-v2"
    text = write_model_card(tmp_path / "m", {"base_model": "tiny-bert"}).read_text()
    assert "Compressed from" not in text and "base_model" not in ModelCard.load(tmp_path / "m" / "README.md").data.to_dict()
