"""The main pipeline (Python API) runs end to end on a tiny Llama with grouped-query attention,
saved as a plain Hugging Face folder with the bundled WordPiece tokenizer: loaded as
``LlamaForSequenceClassification``, compressed with heads / truncate / magnitude / block-influence,
saved, reloaded with the same predictions."""
import json

import pytest
import torch
import transformers

from forgetless.data.tasks import load_task
from forgetless.metrics.speed import SpeedConfig
from forgetless.models.io import load_model
from forgetless.config import EvalConfig
from forgetless.config import RunConfig
from forgetless.pipeline import run_and_save
from forgetless.registry import METHODS
from forgetless.training.trainer import TrainConfig

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def tiny_llama_dir(tmp_path_factory, minilm_tokenizer):
    path = tmp_path_factory.mktemp("tiny-llama")
    config = transformers.LlamaConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                                      max_position_embeddings=128, pad_token_id=minilm_tokenizer.pad_token_id)
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(path)
    minilm_tokenizer.save_pretrained(path)
    return str(path)


@pytest.fixture(scope="module")
def task():
    return load_task("synthetic", seed=0, train_size=64, eval_size=32)


def run(task, model_dir, out, method, options, teacher=None):
    config = RunConfig(model=model_dir, method=METHODS.make_config(method, options), teacher=teacher,
                       train=TrainConfig(epochs=1, learning_rate=1e-3, batch_size=16, max_length=32, progress=False),
                       speed=SpeedConfig(batch_size=4, seq_len=16, warmup=0, repeats=1), eval=EvalConfig(batch_size=32),
                       progress=False)
    return run_and_save(task, config, out).card.to_json()


@pytest.fixture(scope="module")
def truncate_run(tmp_path_factory, tiny_llama_dir, task):
    out = tmp_path_factory.mktemp("truncate")
    return out, run(task, tiny_llama_dir, out, "truncate", {"layers": 2, "selection": "spread"})


def check_saved(out, card, task):
    model, tokenizer = load_model(out / "model")
    assert type(model).__name__ == "LlamaForSequenceClassification" and tokenizer is not None
    assert card["sets"]["dev"]["compressed"]["n"] == len(task.dev)
    return model


def test_truncate(truncate_run, task):
    out, card = truncate_run
    model = check_saved(out, card, task)
    assert model.config.num_hidden_layers == 2
    assert [layer.self_attn.layer_idx for layer in model.model.layers] == [0, 1]
    assert card["params"]["compressed"]["layers"] * 2 == card["params"]["base"]["layers"]


@pytest.mark.parametrize("method, options", [
    ("heads", {"prune_count": 3, "scoring_examples": 16, "scoring_batch": 8}),
    ("magnitude", {"sparsity": 0.5}),
    ("block-influence", {"remove": 1, "calibration_examples": 16}),
])
def test_methods_with_the_fine_tuned_teacher(method, options, truncate_run, tiny_llama_dir, task, tmp_path):
    teacher = truncate_run[1]["params"]["base"]["source"]["path"]  # the cached teacher
    out = tmp_path / method
    card = run(task, tiny_llama_dir, out, method, options, teacher=teacher)
    model = check_saved(out, card, task)
    shape = json.loads((out / "model" / "forgetless.json").read_text())["shape"]
    if method == "heads":  # 3 of the 8 key/value groups (2 per layer, each with 2 query heads) removed
        assert sum(h[-1] for h in shape["heads"]) == 5
        kept = {tuple(k[:3]): k[3] for k in json.loads((out / "work" / "heads-scores.json").read_text())["kept"]}
        for layer in model.model.layers:
            attn = layer.self_attn
            if hasattr(attn, "q_proj"):
                assert attn.q_proj.out_features == 2 * attn.k_proj.out_features  # G = 2 query heads per group
        assert sum(len(v) for v in kept.values()) == 5
    if method == "magnitude":
        assert card["params"]["compressed"]["prunable_sparsity"] == pytest.approx(0.5, abs=0.01)
    if method == "block-influence":
        scores = json.loads((out / "work" / "block-influence-scores.json").read_text())
        assert len(scores["removed"]) == 1 and shape["layers"] == {"decoder": 3}


def test_classifier_without_pad_token_id_takes_the_tokenizers(tmp_path, minilm_tokenizer):
    from forgetless.models.loading import load_classifier

    config = transformers.LlamaConfig(vocab_size=minilm_tokenizer.vocab_size, hidden_size=16, intermediate_size=16,
                                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1)
    assert config.pad_token_id is None
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path)
    minilm_tokenizer.save_pretrained(tmp_path)
    model, tokenizer = load_classifier(str(tmp_path), ["a", "b"])
    assert model.config.pad_token_id == tokenizer.pad_token_id == 0
    batch = tokenizer(["a b c", "a"], padding=True, return_tensors="pt")
    with torch.no_grad():
        assert model(**batch).logits.shape == (2, 2)  # pools the last non-padding token of each row
