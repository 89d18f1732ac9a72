"""Zero-shot label scoring (metrics/zero_shot.py) on a tiny Llama: one forward pass per example equals
scoring each label on its own; contextual calibration by hand; k-shot prompts seeded and never
holding the evaluated example; ``--base as-is`` with ``--recovery none`` never trains."""
import math

import numpy as np
import pytest
import torch

from forgetless.data.task import ExampleSet
from forgetless.errors import ConfigError
from forgetless.data.tasks import load_task
from forgetless.metrics import zero_shot
from forgetless.config import EvalConfig
from forgetless.metrics.speed import SpeedConfig
from forgetless.models.loading import load_causal_lm
from forgetless.config import RunConfig
from forgetless.methods.block_influence.config import BlockInfluenceConfig
from forgetless.outputs import cache_root
from forgetless.pipeline import run_and_save
from forgetless.training.trainer import TrainConfig


def test_one_pass_scoring_equals_scoring_each_label_alone(minilm_tokenizer):
    torch.set_num_threads(1)
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer, seed=3)
    texts = ["the doctor saw the lawyer Answer:", "a much longer prompt about the judge and the senator in the park "
             "who waited Answer:", "short Answer:"]
    prefixes = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    labels = [tok(" " + w, add_special_tokens=False)["input_ids"] for w in ("entailment", "non entailment", "maybe so")]
    assert [len(x) > 1 for x in labels].count(True) >= 2  # multi-token words: the tree mask matters
    scores = zero_shot.one_pass_scores(model, prefixes, labels, tok.pad_token_id, batch_size=2)
    with torch.no_grad():
        for i, p in enumerate(prefixes):
            for j, w in enumerate(labels):
                logp = torch.log_softmax(model(input_ids=torch.tensor([p + w])).logits[0].float(), -1)
                expected = sum(float(logp[len(p) - 1 + k, t]) for k, t in enumerate(w))
                assert abs(scores[i, j] - expected) < 1e-4, (i, j)


def test_contextual_calibration_by_hand():
    scores = np.log([[0.2, 0.8], [0.6, 0.4]])
    content_free = np.log([[0.1, 0.9], [0.3, 0.7]])  # p̂ = mean = [0.2, 0.8]
    calibrated = zero_shot.calibrate(scores, "content-free", content_free)
    assert np.allclose(calibrated, [[0.0, 0.0], [math.log(3.0), math.log(0.5)]])
    centred = zero_shot.calibrate(scores, "set-mean")
    assert np.allclose(centred, [[0.5 * math.log(1 / 3), 0.5 * math.log(2.0)], [0.5 * math.log(3.0), 0.5 * math.log(0.5)]])
    assert np.allclose(zero_shot.calibrate(np.log([[1.0, 3.0]]), "none"), np.log([[0.25, 0.75]]))  # renormalised
    assert centred.argmax(1).tolist() == [1, 0] and calibrated.argmax(1).tolist()[1] == 0


def test_k_shot_prompts_are_seeded_and_exclude_the_evaluated_example(minilm_tokenizer):
    train = ExampleSet("train", [f"sentence {i}" for i in range(12)] + ["the evaluated one"] * 3,
                       [i % 2 for i in range(15)], ["negative", "positive"])
    evaluated = ExampleSet("dev", ["the evaluated one", "sentence 3"], [0, 1], ["negative", "positive"])
    for index, text in enumerate(evaluated.text_a):
        for seed in range(20):
            chosen = zero_shot.shot_indices(train, (text, None), 11, seed, index)
            assert len(chosen) == len(set(chosen)) == 11 and all(train.text_a[i] != text for i in chosen)
            assert chosen == zero_shot.shot_indices(train, (text, None), 11, seed, index)
    assert zero_shot.shot_indices(train, ("x", None), 4, 0, 0) != zero_shot.shot_indices(train, ("x", None), 4, 1, 0)
    with pytest.raises(Exception, match="only 12 other examples"):
        zero_shot.shot_indices(train, ("the evaluated one", None), 13, 0, 0)
    prompt = zero_shot.PROMPTS["sst2"]
    texts = zero_shot.build_prompts(minilm_tokenizer, prompt, evaluated, chat=False, shots=2, train=train, seed=5)
    first = texts[0].split("\n\n")
    assert first[0] == prompt.instruction and len(first) == 4 and first[-1] == "Review: the evaluated one\nAnswer:"
    assert all(b.startswith("Review: sentence ") and b.endswith(("Answer: negative", "Answer: positive")) for b in first[1:3])
    assert texts == zero_shot.build_prompts(minilm_tokenizer, prompt, evaluated, chat=False, shots=2, train=train, seed=5)


def test_base_as_is_with_recovery_none_never_trains(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a post-training run must not train")

    monkeypatch.setattr("forgetless.methods.base.fine_tune", refuse)
    monkeypatch.setattr("forgetless.teacher.fine_tune", refuse)
    task = load_task("synthetic", seed=0, train_size=32, eval_size=16)
    teachers_before = sorted((cache_root() / "teachers").glob("*")) if (cache_root() / "teachers").exists() else []
    config = RunConfig(model="tiny-llama", base="as-is", model_kind="causal-lm", method=BlockInfluenceConfig(remove=1, recovery="none", calibration_examples=8),
                       train=TrainConfig(epochs=1, max_length=48, progress=False),
                       speed=SpeedConfig(batch_size=2, seq_len=8, warmup=0, repeats=1, new_tokens=2),
                       eval=EvalConfig(batch_size=8, score_calibration="set-mean"), progress=False)
    card = run_and_save(task, config, tmp_path / "run").card.to_json()
    assert card["training"]["base"] == "as-is" and card["training"]["base_epochs"] == 0.0
    assert card["training"]["fine_tunes"] == [] and card["training"]["compressed_epochs"] == 0.0
    assert not list((tmp_path / "run" / "work").rglob("checkpoint-*")) and not (tmp_path / "run" / "work" / "train-teacher").exists()
    after = sorted((cache_root() / "teachers").glob("*")) if (cache_root() / "teachers").exists() else []
    assert after == teachers_before  # no teacher written to the cache
    assert card["zero_shot"]["score_calibration"] == "set-mean" and card["zero_shot"]["template"] == "plain"
    decode = card["speed"]["decode_ms_per_token"]
    assert card["speed"]["flop_limit"]["ratio"] > 1.0   # one layer fewer: the model was timed
    # one timed repeat of 2 tokens on a tiny model: the per-token time may vanish in the noise, and then says so
    assert decode["speedup"] is not None or decode["note"].startswith("not measurable: generating took no longer")
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Base: none (the pretrained model as it is). Compressed: starts from the base (the pretrained model as it is)" \
        in report and "fine-tuned teacher" not in report


def test_old_recipes_fine_tune_is_read_as_recovery():
    from forgetless.recipes.load import validate_recipe

    recipe = validate_recipe({"method": "heads", "fine_tune": False}, "old.yaml")
    assert recipe["config"].method.recovery == "none"
    assert validate_recipe({"method": "block-influence", "remove": 1, "fine_tune": "true"})["config"].method.recovery \
        == "fine-tune"
    with pytest.raises(ConfigError, match="old.yaml: key 'fine_tune' \\(old name of recovery\\): expected true or false"):
        validate_recipe({"method": "heads", "fine_tune": "maybe"}, "old.yaml")
