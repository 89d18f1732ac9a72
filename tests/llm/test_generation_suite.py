"""The offline generation suite (``llm-generation``, issue 56): each task's scoring on hand-written answers
(IFEval's checkers, GSM8K's final number, ROUGE-L and F1 computed by hand), the passkey prompts (seeded,
the key at its depth, their length in tokens), the request window (lengths past it refused or left out of
the sweep) and the suite's YAMLs agreeing with its definition."""
from __future__ import annotations

import json

import pytest

from forgetless.data import llm_tasks
from forgetless.data.llm_tasks import GENERATION, PASSKEY, check_window, passkey_tokens, request_window, within_window
from forgetless.errors import ConfigError
from forgetless.llm.suite import LMEvalSet, LMEvalSuite
from forgetless.llm.task_checks import _read
from forgetless.llm.tasks import offline

pytest.importorskip("lm_eval")
pytest.importorskip("langdetect")


def _ifeval_doc(instructions: dict) -> dict:
    """An IFEval document as the offline reader gives it: instruction ids and their kwargs as JSON."""
    return {"key": 1, "prompt": "Write about cats.", "instruction_id_list": list(instructions),
            "kwargs": [json.dumps(k) for k in instructions.values()]}


# ----- scoring --------------------------------------------------------------------------------------------
def test_ifeval_checkers_score_a_response_that_follows_and_one_that_breaks_the_instructions():
    doc = _ifeval_doc({"punctuation:no_comma": {}, "change_case:english_lowercase": {}})
    follows = offline.ifeval_results(doc, ["cats sleep a lot and purr when they are happy"])
    breaks = offline.ifeval_results(doc, ["Cats sleep, eat, and purr."])  # a comma and capitals: both broken
    half = offline.ifeval_results(doc, ["cats sleep, eat and purr"])  # lowercase, but a comma
    assert follows == {"prompt_level_strict_acc": True, "inst_level_strict_acc": [True, True],
                       "prompt_level_loose_acc": True, "inst_level_loose_acc": [True, True]}
    assert breaks["prompt_level_strict_acc"] is False and breaks["inst_level_strict_acc"] == [False, False]
    assert half["prompt_level_strict_acc"] is False and half["inst_level_strict_acc"] == [False, True]
    assert offline.ifeval_instruction_accuracy([[True, True], [False, False], [False, True]]) == pytest.approx(0.5)
    # the loose check forgives a first line that breaks it (lm-eval's rule)
    loose = offline.ifeval_results(_ifeval_doc({"punctuation:no_comma": {}}), ["Sure, here it is:\ncats purr"])
    assert loose["prompt_level_strict_acc"] is False and loose["prompt_level_loose_acc"] is True


def test_ifeval_reader_keeps_the_prompts_its_checkers_score_offline(shared_data):
    rows = offline.ifeval(shared_data)["test"]
    assert len(rows) == 477  # 541 less the 64 whose checkers need NLTK's punkt_tab model
    assert not any(set(r["instruction_id_list"]) & set(offline.IFEVAL_NEEDS_PUNKT) for r in rows)
    assert all(len(r["kwargs"]) == len(r["instruction_id_list"]) for r in rows)


@pytest.fixture(scope="module")
def gsm8k_task(shared_data):
    from forgetless.llm import engine

    manager = engine.task_manager(engine.TASKS_DIR, shared_data, False)
    return engine.load_tasks(["gsm8k_offline"], manager)["gsm8k_offline"]


def _gsm8k_score(task, answer: str, target: str) -> float:
    """The YAML's filter (lm-eval's regex, the last number) then its exact_match against ``#### target``."""
    responses = [[answer]]
    for make in task._filters[0].filters:
        responses = list(make().apply(responses, [None]))
    return float(task.process_results({"question": "q", "answer": f"steps\n#### {target}"}, [responses[0]])
                 ["exact_match"])


@pytest.mark.parametrize("answer, target, expected", [
    ("She sold 48 clips, then 24. So 72 in all.", "72", 1.0),  # the last number counts
    ("72 is wrong; the answer is 70", "72", 0.0),
    ("The answer is $1,234.", "1,234", 1.0),  # $, thousands commas and a final period ignored
    ("It comes to -5", "-5", 1.0),
    ("I do not know", "3", 0.0),
])
def test_gsm8k_exact_match_of_the_final_number(gsm8k_task, answer, target, expected):
    assert _gsm8k_score(gsm8k_task, answer, target) == expected


def test_rouge_l_and_f1_on_known_strings():
    # LCS("the cat sat", "the cat sat on the mat") = 3: precision 3/3, recall 3/6, F = 2/3
    assert offline.summary_results({"summary": "the cat sat on the mat"}, [" the cat sat\n"])["rougeL"] == \
        pytest.approx(2 / 3)
    assert offline.summary_results({"summary": "a b c d"}, ["x y"])["rougeL"] == 0.0
    # "in New York" vs "new york city": 2 tokens shared, precision 2/3, recall 2/3; the best reference counts
    scored = offline.tweetqa_results({"answers": ["new york city", "paris"]}, ["in New York"])
    assert scored["f1"] == pytest.approx(2 / 3) and not scored["exact_match"]
    assert offline.tweetqa_results({"answers": ["w nj"]}, [" W NJ."]) == {"exact_match": True, "f1": 1.0}


def test_passkey_answer_is_right_when_its_first_number_is_the_key():
    doc = {"key": "61744"}
    assert [offline.passkey_results(doc, [a])["acc"] for a in
            (" 61744.", "The pass key is 61744", "12345, no: 61744", "", " 6174")] == [1.0, 1.0, 0.0, 0.0, 0.0]


# ----- passkey prompts --------------------------------------------------------------------------------------
def test_passkey_prompts_are_seeded_and_the_key_is_at_its_depth():
    first, again = offline.passkey(length=512)["test"], offline.passkey(length=512)["test"]
    assert first.to_list() == again.to_list()
    assert len(first) == offline.PASSKEY_ITEMS and len({r["key"] for r in first}) == len(first)
    assert [r["key"] for r in offline.passkey(length=1024)["test"]] != [r["key"] for r in first]
    for row in first:
        prompt = row["prompt"]
        assert prompt.count(row["key"]) == 2  # stated once (twice in its sentence), nowhere else
        body = prompt[len(offline.PASSKEY_INTRO):-len(offline.PASSKEY_QUESTION)]
        needle = body.index("The pass key is")
        before, after = offline.pieces(body[:needle]), offline.pieces(body[body.index("pass key.") + 9:])
        assert before / (before + after) == pytest.approx(row["depth"], abs=6 / (before + after))  # one sentence


@pytest.mark.parametrize("length", list(PASSKEY.values()))
def test_passkey_prompt_length_in_tokens_is_within_5_percent(length, bert_tokenizer):
    prompt = offline.passkey(length=length, items=2)["test"][1]["prompt"]
    tokens = len(bert_tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert abs(tokens - length) <= 0.05 * length, (tokens, length)
    assert passkey_tokens(length) >= tokens + 12  # the window it asks for holds it and its answer


@pytest.fixture(scope="module")
def bert_tokenizer():
    import transformers

    from forgetless.models.loading import resolve_model_path

    return transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))


# ----- the request window -------------------------------------------------------------------------------------
def _suite(names, window=None, sweep=False) -> LMEvalSuite:
    sets = {n: LMEvalSet(n, "generate_until", 20, list(range(20)), f"{n}.yaml", "0") for n in names}
    describe = {"passkey_sweep": "up to the window"} if sweep else {}
    return LMEvalSuite({n: object() for n in names}, sets, None, window, describe)


def test_passkey_task_past_the_window_is_refused_when_named_and_left_out_of_the_sweep():
    assert request_window(None, 8192) == 2048 and request_window(None, 512) == 512 and request_window(6000, 8192) == 6000
    with pytest.raises(ConfigError, match=r"(--lm-eval-tasks |lm_eval_tasks=)passkey_2048_offline: .* at most 2,048 tokens .*name "
                                          r"passkey_256_offline, passkey_512_offline, passkey_1024_offline"):
        check_window(_suite(["passkey_2048_offline"]), 8192, "smollm2")
    check_window(_suite(["passkey_2048_offline"], window=4096), 8192, "smollm2")  # --perplexity-window 4096: fits
    with pytest.raises(ConfigError, match="(--perplexity-window |perplexity_window=)9000: model 'tiny' takes at most 128 tokens"):
        check_window(_suite(["samsum_offline"], window=9000), 128, "tiny")
    check_window(_suite(list(PASSKEY), sweep=True), 128, "tiny")  # the sweep is not refused: it stops at the window
    kept = within_window(_suite(["samsum_offline", *PASSKEY], sweep=True), 2048)
    assert list(kept.sets) == ["samsum_offline", "passkey_256_offline", "passkey_512_offline", "passkey_1024_offline"]
    assert kept.describe["passkey_left_out"] == ["passkey_2048_offline", "passkey_4096_offline"]
    with pytest.raises(ConfigError, match="passkey_4096_offline"):
        within_window(_suite(["passkey_4096_offline"]), 2048)


def test_suite_yamls_agree_with_its_definition():
    from forgetless.llm.engine import TASKS_DIR

    yamls = {data["task"]: data for data in map(_read, TASKS_DIR.glob("*.yaml"))}
    for name in (*GENERATION, llm_tasks.EVALUATED_CALIBRATION):
        assert yamls[name]["output_type"] == "generate_until" and yamls[name]["generation_kwargs"]["do_sample"] is False
    for name, length in PASSKEY.items():
        assert yamls[name]["dataset_kwargs"] == {"length": length}
        assert yamls[name]["generation_kwargs"]["max_gen_toks"] <= llm_tasks.PASSKEY_ROOM - 32
    assert llm_tasks.EVALUATED_CALIBRATION not in GENERATION  # its documents are the default calibration texts
