"""Divergence along the base's own answers (``llm/divergence.py``, ``llm/answers.py``) on tiny Llamas built
from a config: the first divergence and "identical answer" read from one teacher-forced forward equal what the
compressed model's own greedy ``generate`` gives, token for token; the KL equals a direct computation; padding
changes nothing; the base's answers are cached; bad prompts and settings are one clear error."""
import copy
import json

import numpy as np
import pytest
import torch

from forgetless.errors import ConfigError, DataError
from forgetless.llm import answers as glue
from forgetless.llm.divergence import AnswerScores, entropy_thirds, prefix_lengths, summarize, third_of, token_mean

from any_decoder import char_tokenizer, tiny_model

PROMPTS = ["The quick brown fox", "Pack my box", "How vexingly quick", "Sphinx of black quartz, judge",
           "a", "Hello, world! A longer prompt.", "0123", "zebra"]
EOS = 2


def _base(seed: int = 0):
    """A tiny random Llama whose greedy answers vary and sometimes end: sharp logits, the end token likely."""
    model = tiny_model("llama", seed=seed)
    with torch.no_grad():
        model.lm_head.weight.mul_(8)
        model.lm_head.weight[EOS] += 0.35 * model.lm_head.weight.abs().mean()
    return model.eval()


def _perturbed(model, scale: float, seed: int = 1):
    """A copy with every weight matrix moved by ``scale`` of its mean magnitude: some answers part, some do not."""
    other = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in other.parameters():
            if p.dim() == 2:
                p.add_(scale * p.abs().mean() * torch.randn(p.shape, generator=generator))
    return other.eval()


@pytest.fixture(scope="module")
def models():
    base = _base()
    return base, _perturbed(base, 0.02), char_tokenizer()


def _prompt_set(n_new: int = 12, prompts=PROMPTS):
    return glue.PromptSet("test", "inline", list(prompts), len(prompts), n_new)


def _own_greedy(model, ids: list[int], n_new: int) -> list[int]:
    """The model's own greedy answer to one prompt, unpadded, stopped after the end token."""
    out = model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         max_new_tokens=n_new, do_sample=False, eos_token_id=EOS, pad_token_id=0)[0, len(ids):].tolist()
    return out[:out.index(EOS) + 1] if EOS in out else out


def test_first_divergence_and_identical_answers_equal_the_compressed_models_own_generate(models):
    base, compressed, tok = models
    prompts = _prompt_set()
    answered = glue.base_answers(base, tok, prompts, batch_size=3)
    scored = glue.score_pairs(base, compressed, answered["prompt_ids"], answered["answers"], pad=0, batch_size=3)
    identical, parted, ended = 0, 0, 0
    for ids, answer, s in zip(answered["prompt_ids"], answered["answers"], scored):
        assert answer == _own_greedy(base, ids, 12)  # the base's batched answer is its own unpadded greedy one
        own = _own_greedy(compressed, ids, 12)
        differ = [i for i, (a, b) in enumerate(zip(answer, own)) if a != b]
        expected = differ[0] if differ else None
        assert s.first_divergence == expected, (answer, own)
        assert (s.first_divergence is None) == (own == answer)
        identical += own == answer
        parted += own != answer
        ended += answer[-1] == EOS
    assert identical >= 1 and parted >= 1 and ended >= 1  # the fixture covers both outcomes and ended answers


def test_kl_and_entropy_equal_a_direct_computation(models):
    base, compressed, tok = models
    answered = glue.base_answers(base, tok, _prompt_set(), batch_size=4)
    scored = glue.score_pairs(base, compressed, answered["prompt_ids"], answered["answers"], pad=0, batch_size=4)
    for ids, answer, s in zip(answered["prompt_ids"], answered["answers"], scored):
        sequence = torch.tensor([ids + answer])
        with torch.no_grad():
            lb = base(sequence).logits[0, len(ids) - 1:len(ids) - 1 + len(answer)].double()
            lc = compressed(sequence).logits[0, len(ids) - 1:len(ids) - 1 + len(answer)].double()
        log_p = lb - torch.logsumexp(lb, -1, keepdim=True)
        log_q = lc - torch.logsumexp(lc, -1, keepdim=True)
        kl = (log_p.exp() * (log_p - log_q)).sum(-1).numpy()
        entropy = -(log_p.exp() * log_p).sum(-1).numpy()
        np.testing.assert_allclose(s.kl, kl, atol=1e-5, rtol=0)
        np.testing.assert_allclose(s.entropy, entropy, atol=1e-5, rtol=0)
        np.testing.assert_array_equal(s.agree, lc.argmax(-1).numpy() == np.array(answer))
    assert max(s.kl.max() for s in scored) > 1e-3  # the perturbation moved the distributions


def test_padding_changes_nothing(models):
    """Batched (left-padded generation, right-padded scoring) equals one prompt at a time."""
    base, compressed, tok = models
    prompts = _prompt_set()
    ids, _ = glue.encode_prompts(tok, prompts.prompts)
    batched = glue.generate_answers(base, ids, 12, 8, [EOS], 0)
    alone = [glue.generate_answers(base, [row], 12, 1, [EOS], 0)[0] for row in ids]
    assert batched == alone
    together = glue.score_pairs(base, compressed, ids, batched, pad=0, batch_size=8)
    single = glue.score_pairs(base, compressed, ids, batched, pad=0, batch_size=1)
    for a, b in zip(together, single):
        np.testing.assert_allclose(a.kl, b.kl, atol=1e-5, rtol=0)
        np.testing.assert_array_equal(a.agree, b.agree)


def test_scoring_batches_keep_their_logits_within_the_budget(models, monkeypatch):
    """A batch of prompts of different lengths keeps logits from its earliest answer position for every row: the
    batches stay within LOGITS_BUDGET (one row at least), every prompt once, and the scores equal one prompt at a
    time (SmolLM2's widest batch of 8 IFEval prompts kept 285 MiB of logits per model)."""
    ids = [[1] * n for n in (5, 40, 7, 300, 12, 90)]
    answers = [[2] * n for n in (3, 10, 1, 20, 8, 4)]
    vocabulary, budget = 1000, 4 * 1000 * 400
    monkeypatch.setattr(glue, "LOGITS_BUDGET", budget)
    batches = glue.score_batches(ids, answers, 4, vocabulary)
    assert sorted(i for b in batches for i in b) == list(range(6)) and all(len(b) <= 4 for b in batches)
    for b in batches:
        span = max(len(ids[i]) + len(answers[i]) for i in b) - min(len(ids[i]) for i in b) + 1
        assert len(b) == 1 or len(b) * span * vocabulary * 4 <= budget
    assert [3] in batches and len(batches) > 2  # the 300-token prompt alone; without the budget: 2 batches
    base, compressed, tok = models
    prompt_ids, _ = glue.encode_prompts(tok, _prompt_set().prompts)
    answered = glue.generate_answers(base, prompt_ids, 12, 8, [EOS], 0)
    monkeypatch.setattr(glue, "LOGITS_BUDGET", 4 * base.config.vocab_size * 20)  # a row or two a batch
    tight = glue.score_pairs(base, compressed, prompt_ids, answered, pad=0, batch_size=8)
    single = glue.score_pairs(base, compressed, prompt_ids, answered, pad=0, batch_size=1)
    for a, b in zip(tight, single):
        np.testing.assert_allclose(a.kl, b.kl, atol=1e-5, rtol=0)
        np.testing.assert_array_equal(a.agree, b.agree)


def test_the_base_answers_once_then_the_cache_returns_the_same_answers(models, monkeypatch):
    base, _, tok = models
    prompts = _prompt_set(prompts=PROMPTS[:3] + ["cache me"])
    first = glue.base_answers(base, tok, prompts, batch_size=2)
    assert first["cache"]["reused"] is False and first["cache"]["path"]

    def no_generation(*args, **kwargs):
        raise AssertionError("the cached answers were generated again")

    monkeypatch.setattr(glue, "generate_answers", no_generation)
    again = glue.base_answers(base, tok, prompts, batch_size=2)
    assert again["cache"] == {"path": first["cache"]["path"], "reused": True}
    assert again["answers"] == first["answers"] and again["prompt_ids"] == first["prompt_ids"]
    other = _perturbed(base, 0.01, seed=5)  # other weights: another entry
    assert glue.answers_entry(other, tok, prompts, 2) != glue.answers_entry(base, tok, prompts, 2)
    assert glue.answers_entry(base, tok, _prompt_set(13, prompts.prompts), 2) != glue.answers_entry(base, tok, prompts, 2)


def test_the_chat_template_wraps_each_prompt_when_the_tokenizer_has_one():
    tok = char_tokenizer()
    plain, chat = glue.encode_prompts(tok, ["ab"])
    assert chat is False and plain == [[tok.convert_tokens_to_ids(c) for c in "ab"]]
    tok.chat_template = "{% for m in messages %}<{{ m['content'] }}>{% endfor %}{% if add_generation_prompt %}:{% endif %}"
    wrapped, chat = glue.encode_prompts(tok, ["ab"])
    assert chat is True and wrapped == [[tok.convert_tokens_to_ids(c) for c in "<ab>:"]]


def test_compare_answers_summarizes_for_the_card(models):
    base, compressed, tok = models
    result = glue.compare_answers(base, compressed, tok, _prompt_set(), batch_size=4)
    assert result["prompt_set"]["n"] == len(PROMPTS) and result["answer_tokens"] > len(PROMPTS)
    positions = result["first_divergence"]["positions"]
    assert result["identical"]["value"] == pytest.approx(np.mean([p is None for p in positions]))
    assert 0 < len(result["examples"]) <= 3 and all(e["predicted"] for e in result["examples"])
    assert [e["position"] for e in result["examples"]] == sorted(p for p in positions if p is not None)[:3]
    low, high = result["kl"]["low"], result["kl"]["high"]
    assert low <= result["kl"]["value"] <= high
    assert result["identical_first"]["12"] == sum(p is None for p in positions)


# ----- the maths alone --------------------------------------------------------------------------------
def _scores(kl, entropy, agree):
    return AnswerScores(np.array(kl, float), np.array(entropy, float), np.array(agree, bool))


def test_summary_by_hand():
    scored = [_scores([0.1, 0.2, 0.3], [0.0, 1.0, 2.0], [True, True, False]),
              _scores([0.5], [3.0], [True]),
              _scores([0.0, 0.0], [0.5, 4.0], [False, True])]
    out = summarize(scored, max_new_tokens=4, n_resamples=200)
    assert out["kl"]["value"] == pytest.approx(1.1 / 6) and out["kl"]["tokens"] == 6
    assert out["top1_agreement"]["value"] == pytest.approx(4 / 6)
    assert out["first_divergence"] == {"median": 1.0, "parted": 2, "positions": [2, None, 0]}
    assert out["identical"]["value"] == pytest.approx(1 / 3)
    assert out["identical_first"] == {"1": 2, "4": 1}  # N = 1: parted at 2 and never; N = 4: never only
    cuts = out["entropy_thirds"]["cuts_nats"]
    assert cuts == pytest.approx(list(np.quantile([0, 1, 2, 3, 0.5, 4], [1 / 3, 2 / 3])))
    thirds = out["entropy_thirds"]  # entropies 0, 0.5 | 1, 2 | 3, 4
    assert (thirds["low"]["kl"]["tokens"], thirds["middle"]["kl"]["tokens"], thirds["high"]["kl"]["tokens"]) == (2, 2, 2)
    assert thirds["low"]["kl"]["value"] == pytest.approx(0.05)
    assert thirds["high"]["kl"]["value"] == pytest.approx(0.25)
    assert thirds["middle"]["top1_agreement"]["value"] == pytest.approx(0.5)


def test_the_thirds_and_intervals():
    assert entropy_thirds(np.arange(7.0)) == pytest.approx((2.0, 4.0))
    assert third_of(np.array([2.0, 2.5, 4.0, 4.1]), (2.0, 4.0)).tolist() == [0, 1, 1, 2]
    assert prefix_lengths(64) == [1, 4, 16, 64] and prefix_lengths(10) == [1, 4, 10]
    mean = token_mean([np.array([1.0, 1.0]), np.array([3.0])], n_resamples=500)
    assert mean["value"] == pytest.approx(5 / 3) and 1.0 <= mean["low"] <= mean["high"] <= 3.0
    assert token_mean([np.array([])])["value"] is None
    with pytest.raises(ValueError, match="no answers"):
        summarize([], 4)


# ----- bad input ----------------------------------------------------------------------------------
def test_a_prompt_file_without_prompts_is_one_clear_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(DataError, match="holds no prompt"):
        glue.read_prompts(empty)
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps({"prompt": "  "}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="holds no prompt"):
        glue.read_prompts(blank)
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"answer": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="none of the prompt fields"):
        glue.read_prompts(other)
    with pytest.raises(DataError, match="not a file"):
        glue.read_prompts(tmp_path / "missing.jsonl")
    lines = tmp_path / "prompts.txt"
    lines.write_text("first\n\nsecond line\n", encoding="utf-8")
    assert glue.read_prompts(lines) == ["first", "second line"]


def test_the_prompt_sample_is_seeded_and_capped(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"p{i}\nline"}) + "\n" for i in range(10)), encoding="utf-8")
    a, b = glue.prompt_set(path, 4, None, seed=3), glue.prompt_set(path, 4, None, seed=3)
    assert a.prompts == b.prompts and len(a.prompts) == 4 and a.size == 10 and a.max_new_tokens == 64
    assert all(p.endswith("\nline") for p in a.prompts)  # newlines kept
    assert glue.prompt_set(path, 50, 8, seed=0).prompts == [f"p{i}\nline" for i in range(10)]


def test_a_context_past_the_models_window_is_refused_before_generating(models, monkeypatch):
    base, _, tok = models
    monkeypatch.setattr(glue, "generate_answers", lambda *a, **k: pytest.fail("generated"))
    with pytest.raises(ConfigError, match=r"divergence.max.new.tokens.60: prompt 1 .* > the model's context of 64"):
        glue.base_answers(base, tok, _prompt_set(60, ["short", "a prompt long enough"]), batch_size=2)


def test_a_base_that_answers_nothing_is_a_warning(models):
    base, _, tok = models
    silent = copy.deepcopy(base)
    bump = torch.zeros(silent.config.vocab_size)
    bump[EOS] = 1e4
    silent.lm_head.register_forward_hook(lambda module, inputs, logits: logits + bump)  # the end token always first
    result = glue.compare_answers(silent, _perturbed(silent, 0.01), tok, _prompt_set(prompts=PROMPTS[:3]), 3)
    assert result["empty_answers"] == 3 and result["answer_tokens"] == 3
    assert "only an end-of-sequence token" in result["warnings"][0]
