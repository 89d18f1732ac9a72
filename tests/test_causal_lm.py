"""Decoder-only LMs as their own model kind (zero-shot scoring: test_zero_shot.py): held-out
perplexity (hand-checked), prompt + label-word training rows, and the CLI runs the issue asks for (tiny-llama as classifier with heads / block-influence; as causal LM end to end)."""
import json
import math

import torch

from forgetless.cli import main
from forgetless.data.task import PairSet
from forgetless.metrics.perplexity import perplexity
from forgetless.models.loading import load_causal_lm
from forgetless.report.card import validate_card
from forgetless.training.encode import IGNORE_INDEX, encode_causal_pairs


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size(minilm_tokenizer):
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer)
    with torch.no_grad():
        model.lm_head.weight.zero_()
    result = perplexity(model, tok, ["the doctor saw the lawyer", "a second line of text"], max_length=4)
    assert math.isclose(result["perplexity"], model.config.vocab_size, rel_tol=1e-4)
    n1, n2 = (len(tok(t, add_special_tokens=False)["input_ids"]) for t in ("the doctor saw the lawyer",
                                                                           "a second line of text"))
    assert result["tokens"] == sum(n - math.ceil(n / 4) for n in (n1, n2))  # first token of each window unscored


def test_causal_rows_put_the_loss_on_the_label_word_only(minilm_tokenizer):
    pairs = PairSet("train", ["a b Answer:"], [[" entailment"]])
    row = encode_causal_pairs(pairs, minilm_tokenizer)[0]
    n_prompt = len(minilm_tokenizer("a b Answer:", add_special_tokens=False)["input_ids"])
    assert row["labels"][:n_prompt] == [IGNORE_INDEX] * n_prompt
    assert row["labels"][n_prompt:] == row["input_ids"][n_prompt:] and len(row["labels"]) == len(row["input_ids"])


def test_cli_tiny_llama_heads_block_influence_and_causal_lm(tmp_path, capsys):
    common = ["--model", "tiny-llama", "--train-size", "48", "--eval-size", "16", "--epochs", "1", "--lr", "1e-3",
              "--bench-repeats", "1", "--bench-seq-len", "16", "--bench-new-tokens", "2", "--no-progress"]
    assert main(["compress", "--method", "heads", "--ratio", "0.5", "--scoring-examples", "8",
                 "--out", str(tmp_path / "heads"), *common]) == 0
    card = json.loads((tmp_path / "heads" / "report.json").read_text())
    validate_card(card)
    assert card["kind"]["model"] == "classifier" and card["params"]["compressed"]["total"] < card["params"]["base"]["total"]
    assert main(["compress", "--method", "block-influence", "--layers", "2", "--out", str(tmp_path / "bi"), *common]) == 0
    text = tmp_path / "ppl.txt"
    text.write_text("the doctor saw the lawyer\nthe judge helped the senator in the park\n")
    assert main(["compress", "--method", "truncate", "--layers", "2", "--model-kind", "causal-lm",
                 "--perplexity-file", str(text), "--out", str(tmp_path / "lm"), *common]) == 0
    card = json.loads((tmp_path / "lm" / "report.json").read_text())
    validate_card(card)
    assert card["kind"] == {"task": "classification", "model": "causal-lm"} and card["speed"]["mode"] == "prefill+decode"
    assert card["language_model"]["compressed"]["perplexity"] > 1 and card["speed"]["decode_ms_per_token"]["base"] > 0
    code = main(["compress", "--method", "heads", "--model-kind", "causal-lm", "--out", str(tmp_path / "x"), *common])
    assert code == 2 and "does not apply to a causal-lm model" in capsys.readouterr().err
