"""Decoder-only LMs as their own model kind (zero-shot scoring: test_zero_shot.py): held-out
perplexity (hand-checked), prompt + label-word training rows, and the CLI runs the issue asks for (tiny-llama as classifier with heads / block-influence; as causal LM end to end)."""
import json
import math

import torch

from forgetless.cli import main
from forgetless.data.task import PairSet
from forgetless.metrics.perplexity import join, perplexity
from forgetless.models.loading import load_causal_lm
from forgetless.report.card_types import Card
from forgetless.training.encode import IGNORE_INDEX, encode_causal_pairs


def test_perplexity_of_a_uniform_model_is_the_vocabulary_size(minilm_tokenizer):
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer)
    with torch.no_grad():
        model.lm_head.weight.zero_()
    text = join(["the doctor saw the lawyer", "a second line of text"])
    result = perplexity(model, tok, text, window=4)
    assert math.isclose(result["perplexity"], model.config.vocab_size, rel_tol=1e-4)
    n = len(tok(text)["input_ids"])  # one text, the tokenizer's special tokens included (as the papers' scripts)
    assert (result["tokens"], result["windows"], result["window"]) == (n, n // 4, 4)
    assert result["scored"] == (n // 4) * 3 and result["dropped"] == n % 4  # first token of a window unscored


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
    Card.from_json(card)
    assert card["kind"]["model"] == "classifier" and card["params"]["compressed"]["total"] < card["params"]["base"]["total"]
    assert main(["compress", "--method", "block-influence", "--layers", "2", "--out", str(tmp_path / "bi"), *common]) == 0
    text = tmp_path / "ppl.txt"
    text.write_text("the doctor saw the lawyer\nthe judge helped the senator in the park\n")
    assert main(["compress", "--method", "truncate", "--layers", "2", "--model-kind", "causal-lm",
                 "--perplexity-file", str(text), "--out", str(tmp_path / "lm"), *common]) == 0
    card = json.loads((tmp_path / "lm" / "report.json").read_text())
    Card.from_json(card)
    assert card["kind"] == {"task": "classification", "model": "causal-lm"} and card["speed"]["mode"] == "prefill+decode"
    decode = card["speed"]["decode_ms_per_token"]
    assert card["language_model"]["compressed"]["perplexity"] > 1
    if decode["base"] is None or decode["compressed"] is None:  # under heavy load generate − prefill can be ≤ 0
        assert decode["speedup"] is None and "not measurable" in decode["note"]
    else:
        assert decode["base"] > 0 and decode["compressed"] > 0 and decode["speedup"] > 0
    assert main(["compress", "--method", "heads", "--ratio", "0.5", "--scoring-examples", "8", "--recovery", "none",
                 "--model-kind", "causal-lm", "--perplexity-file", str(text), "--out", str(tmp_path / "lm-heads"),
                 *common]) == 0  # key/value groups scored by the label word's loss after the prompt
    card = json.loads((tmp_path / "lm-heads" / "report.json").read_text())
    Card.from_json(card)
    assert card["kind"]["model"] == "causal-lm" and card["params"]["compressed"]["layers"] < card["params"]["base"]["layers"]
    code = main(["compress", "--method", "rahp", "--model-kind", "causal-lm", "--out", str(tmp_path / "x"), *common])
    assert code == 2 and "does not apply to a causal-lm model" in capsys.readouterr().err


def test_causal_rows_keep_the_end_of_a_long_prompt(minilm_tokenizer):
    prompt = " ".join(f"w{i}" for i in range(60)) + " Answer:"
    ids = minilm_tokenizer(prompt, add_special_tokens=False)["input_ids"]
    row = encode_causal_pairs(PairSet("train", [prompt], [[" yes"]]), minilm_tokenizer, max_source=8)[0]
    assert row["input_ids"][:8] == ids[-8:] and row["labels"][:8] == [IGNORE_INDEX] * 8


def test_michel_importance_of_a_causal_lm_is_the_label_word_loss_gradient(minilm_tokenizer):
    """|∂L/∂ξ| of a key/value group (L: the label word's cross-entropy after the prompt, position t
    predicting token t + 1) equals the gradient of an independent scalar ξ that scales the group's
    columns of the o_proj input, per example, averaged. (Llama's RMSNorm computes in float32, so a
    finite difference in float64 is noisy at 1e-3; autograd through a plain hook is exact.)"""
    from forgetless.methods._shared.head_layout import head_layout
    from forgetless.methods.rahp.model_scoring import michel_importance
    from forgetless.training.encode import collate

    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer)
    model = model.double().eval()
    pairs = PairSet("train", ["the doctor saw the lawyer . Answer:", "a judge helped . Answer:"], [[" yes"], [" no"]])
    rows = encode_causal_pairs(pairs, tok)
    flat = [key + (h,) for key, h in head_layout(model).entries()]
    importance = michel_importance(model, [collate(rows)])
    attn = model.model.layers[1].self_attn
    width = attn.o_proj.weight.shape[1] // attn.config.num_key_value_heads  # one key/value group's columns

    def gate_gradient(row) -> float:
        xi = torch.ones((), dtype=torch.float64, requires_grad=True)
        hook = attn.o_proj.register_forward_pre_hook(
            lambda mod, args: (torch.cat([args[0][..., :width] * xi, args[0][..., width:]], dim=-1),))
        batch = collate([row])
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
        hook.remove()
        loss = torch.nn.functional.cross_entropy(logits[0, :-1], batch["labels"][0, 1:], ignore_index=IGNORE_INDEX,
                                                 reduction="sum")
        return torch.autograd.grad(loss, xi)[0].item()

    expected = sum(abs(gate_gradient(r)) for r in rows) / len(rows)
    index = flat.index(("decoder", 1, "self", 0))
    assert expected > 1e-4 and math.isclose(importance[index].item(), expected, rel_tol=1e-5)


def test_decode_time_not_separable_from_prefill_is_not_measurable(monkeypatch):
    """generate − prefill ≤ 0 (timing noise) gives None and a note, never a negative time per token."""
    from forgetless.kinds import causal_lm
    from forgetless.metrics.speed import SpeedConfig
    from forgetless.report.size_speed_markdown import _speed_row

    def fake(base, compressed, config, generate):
        t = {"base": [0.010], "compressed": [0.030 if generate else 0.040]}  # compressed: generate < prefill
        return {"times_s": {"latency": dict(t), "throughput": dict(t)}, "latency_ms": {}, "throughput_per_s": {}}

    monkeypatch.setattr(causal_lm, "compare_speed", fake)
    monkeypatch.setattr(causal_lm, "flop_limit", lambda *a: {"ratio": None})
    result = causal_lm.CausalLMKind().speed(None, None, SpeedConfig(new_tokens=5))
    d = result["decode_ms_per_token"]
    assert d["compressed"] is None and d["speedup"] is None and "not measurable" in d["note"]
    assert d["base"] is None  # base: generate == prefill, 0 ms per token is not a time either
    assert "not measurable" in _speed_row("batch 1 (ms per token)", d, None, meaningful=False)
