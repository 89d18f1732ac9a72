"""The divergence along the base's own answers where a user gets it: ``forgetless.evaluate(..., base=,
divergence_prompts=)`` and ``forgetless compress --divergence-prompts`` on an LLM suite put it in the card's
``llm.divergence`` (typed, in the shipped schema) and its page shows the numbers and the prompts where the
answers part, their text escaped; bad settings are one clear error before any model is loaded."""
import json

import pytest
import torch

import forgetless
from forgetless.cli import main
from forgetless.config import TaskConfig
from forgetless.data.tasks import task_from_config
from forgetless.errors import ConfigError, OptionError
from forgetless.llm.card import cell, divergence_lines
from forgetless.models.loading import load_causal_lm
from forgetless.options import build

from llm_data import write_llm_data

pytest.importorskip("lm_eval")
PROMPTS = ["Write a *bold* <script>alert(1)</script> | pipe", "List three fruits.", "Say [a](http://x) link",
           "Count to five.", "Name a colour."]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = write_llm_data(tmp_path_factory.mktemp("llm-data"))
    (root / "llm/ifeval").mkdir(parents=True, exist_ok=True)
    (root / "llm/ifeval/input_data.jsonl").write_text("".join(json.dumps({"key": i, "prompt": p}) + "\n"
                                                             for i, p in enumerate(PROMPTS)), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def pair(minilm_tokenizer):
    base, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer, seed=3)
    with torch.no_grad():
        base.lm_head.weight.mul_(40)
    return base.eval(), _pruned(base), tok


def _pruned(model):
    """A copy with the smaller half of each decoder weight matrix's entries zeroed in one layer: some answers part."""
    import copy

    other = copy.deepcopy(model)
    with torch.no_grad():
        weight = other.model.layers[0].mlp.down_proj.weight
        weight[weight.abs() < weight.abs().median()] = 0
    return other.eval()


def test_evaluate_with_base_gives_the_divergence(data, pair):
    base, compressed, tok = pair
    compared = forgetless.evaluate(compressed, "lm-eval", base=base, tokenizer=tok, data_dir=str(data),
                                   lm_eval_tasks=["piqa_offline"], eval_size=2, divergence_prompts=4,
                                   divergence_max_new_tokens=6)
    d = compared.llm.divergence
    assert d["prompt_set"]["n"] == 4 and d["prompt_set"]["size"] == 5 and d["prompt_set"]["max_new_tokens"] == 6
    assert d["prompt_set"]["source"].endswith("ifeval/input_data.jsonl")
    assert len(d["first_divergence"]["positions"]) == 4 and d["kl"]["tokens"] == d["answer_tokens"]
    assert "divergence along the base's greedy answers to 4 of the 5 prompts" in compared.task.protocol


def test_compress_puts_it_on_the_card_escaped(data, tmp_path, capsys, monkeypatch):
    """And where nothing after the evaluations runs the base again (--speed none, no CLEVER, no bit budget), its
    weights are freed once it has answered, been compared along its answers and been scored: the compressed model
    is evaluated without them in memory (counted on the base's own parameters); the card still counts the base."""
    from forgetless.kinds.causal_lm import CausalLMKind

    loaded, seen = [], []
    load, evaluate = CausalLMKind.load_model, CausalLMKind.evaluate

    def counted_load(self, *args, **kwargs):
        model, tokenizer = load(self, *args, **kwargs)
        loaded.append(model)
        return model, tokenizer

    def watched(self, model, *args, **kwargs):
        seen.append((model is loaded[0], sorted({p.device.type for p in loaded[0].parameters()})))
        return evaluate(self, model, *args, **kwargs)

    monkeypatch.setattr(CausalLMKind, "load_model", counted_load)
    monkeypatch.setattr(CausalLMKind, "evaluate", watched)
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("\n".join(PROMPTS) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    code = main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "magnitude", "--sparsity", "0.6",
                 "--recovery", "none", "--task", "lm-eval", "--lm-eval-tasks", "piqa_offline", "--data-dir", str(data),
                 "--eval-size", "2", "--divergence-prompts", "5", "--divergence-file", str(prompts),
                 "--divergence-max-new-tokens", "8", "--speed", "none", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr().err[-2000:]
    card = json.loads((out / "report.json").read_text())
    d = card["llm"]["divergence"]
    assert d["prompt_set"]["n"] == 5 and d["prompt_set"]["max_new_tokens"] == 8
    assert card["run"]["task"]["divergence_prompts"] == 5
    page = (out / "report.md").read_text()
    assert "### What it says: the compressed model along the base's own answers" in page
    assert "<script>" not in page and "<script>" not in (out / "report.html").read_text()
    assert d["examples"] and all(cell(e["prompt"]) in page for e in d["examples"])  # shown as text, escaped
    assert len(loaded) == 1 and seen == [(True, ["cpu"]), (False, ["meta"])]
    assert card["params"]["base"]["total"] == card["params"]["compressed"]["total"] > 0


def test_the_card_lines_escape_a_models_words():
    assert cell("a *b* <i>|c\nd & <<t>>") == r"a \*b\* &lt;i\>\|c ⏎ d \& &lt;&lt;t\>\>"
    assert cell("x" * 300).endswith("x…") and cell("") == "(nothing)"
    entry = {"value": 0.5, "low": 0.4, "high": 0.6, "n": 2, "tokens": 4}
    d = {"prompt_set": {"n": 2, "size": 9, "source": "p.jsonl", "chat_template": True, "max_new_tokens": 4},
         "answer_tokens": 4, "kl": entry, "top1_agreement": entry, "identical": {**entry},
         "first_divergence": {"median": 1.0, "parted": 1, "positions": [1, None]},
         "identical_first": {"1": 2, "4": 1},
         "entropy_thirds": {"low": {"kl": entry, "top1_agreement": entry}, "middle": {"kl": entry, "top1_agreement": entry},
                            "high": {"kl": entry, "top1_agreement": entry}, "cuts_nats": [0.1, 0.2]},
         "warnings": ["divergence: something"],
         "examples": [{"prompt": "<b>hi</b>", "position": 1, "shared": "a", "base": "b*", "compressed": "[c](x)",
                       "predicted": True}]}
    text = "\n".join(divergence_lines(d))
    assert "| identical answers | 1 of 2: 50.0% [40.0, 60.0] |" in text
    assert "| identical for the first 1 / 4 tokens | 2 / 1 of 2 |" in text
    assert r"| &lt;b\>hi&lt;\/b\> | 1 | a | b\* | \[c\]\(x\) |" in text
    assert "⚠ divergence: something" in text


# ----- bad input, before any model is loaded ------------------------------------------------------
def _task(data, **options):
    config = build(TaskConfig, {"name": "lm-eval", "lm_eval_tasks": ["piqa_offline"], "data_dir": str(data), **options},
                   "task")
    return task_from_config(config)


def test_bad_divergence_settings_are_one_clear_error(data, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(forgetless.errors.DataError, match="holds no prompt"):
        _task(data, divergence_prompts=3, divergence_file=str(empty))
    with pytest.raises(ConfigError, match="which is off; give divergence.prompts"):
        _task(data, divergence_file=str(empty))
    with pytest.raises(ConfigError, match="which is off"):
        _task(data, divergence_max_new_tokens=8)
    with pytest.raises(ConfigError, match="divergence.prompts.3: its default prompts are the data folder's IFEval prompts; give divergence.file.FILE"):
        task_from_config(build(TaskConfig, {"name": "lm-eval", "lm_eval_tasks": ["piqa_offline"],
                                            "divergence_prompts": 3}, "task"))
    for value in (0, 10**6):
        with pytest.raises(OptionError, match="divergence.max.new.tokens"):
            build(TaskConfig, {"name": "lm-eval", "divergence_max_new_tokens": value}, "task")
    with pytest.raises(OptionError, match="divergence.prompts"):
        build(TaskConfig, {"name": "lm-eval", "divergence_prompts": -1}, "task")


def test_a_divergence_option_on_another_task_or_without_base_is_refused(data, pair):
    with pytest.raises(ConfigError, match="divergence.prompts: applies to task.llm-generation, llm-zero-shot, lm-eval, not synthetic"):
        task_from_config(build(TaskConfig, {"name": "synthetic", "divergence_prompts": 3}, "task"))
    base, compressed, tok = pair
    with pytest.raises(ConfigError, match="give base="):
        forgetless.evaluate(compressed, "lm-eval", tokenizer=tok, data_dir=str(data), lm_eval_tasks=["piqa_offline"],
                            divergence_prompts=2)


def test_answers_past_the_models_window_are_refused_before_loading(data, tmp_path, capsys):
    code = main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "magnitude", "--recovery", "none",
                 "--task", "lm-eval", "--lm-eval-tasks", "piqa_offline", "--data-dir", str(data),
                 "--divergence-prompts", "2", "--divergence-max-new-tokens", "600", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "--divergence-max-new-tokens 600: model 'tiny-llama' takes at most 512 tokens" in err, err
    assert "[1/" not in err and not (tmp_path / "o").exists()


def test_the_evaluate_command_refuses_a_comparison_it_cannot_make(data, tmp_path, capsys):
    """``forgetless evaluate`` scores one model: --divergence-prompts would be silently ignored there."""
    code = main(["evaluate", str(tmp_path / "any-model"), "--task", "lm-eval", "--lm-eval-tasks", "piqa_offline",
                 "--data-dir", str(data), "--divergence-prompts", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "error: --divergence-prompts 2: compares a compressed model with its base" in err, err
