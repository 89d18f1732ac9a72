"""Bad inputs of the offline generation suite (``--task llm-generation``, issue 56): a data folder without
it or with a prompt file holding no prompt, a set whose answers are empty, a passkey length or a request
window past the model's context, a task that would be calibrated on its own test documents, options the
suite does not take. Each is one error before the model loads; judged as ``test_bad_inputs_llm.py`` judges
its cases (``judge``: clear / correct / unclear / traceback / silent / destructive)."""
from __future__ import annotations

from pathlib import Path

import pytest

from llm_data import write_generation_data
from test_bad_inputs_llm import cli, run_case

pytest.importorskip("lm_eval")
pytest.importorskip("langdetect")

TINY = ("--model", "tiny-llama", "--base", "as-is", "--no-progress", "--bench-repeats", "1", "--bench-seq-len", "16",
        "--out", "{out}")
MAGNITUDE = ("--method", "magnitude", "--recovery", "none")


def generation(data: str, *extra, method=MAGNITUDE):
    """``forgetless compress`` of tiny-llama on the generation suite of the fixture's data folder ``data``."""
    return cli("compress", *TINY, *method, "--task", "llm-generation", "--data-dir", "{" + data + "}", *extra)


def lm_eval_task(name: str, *extra, method=MAGNITUDE):
    """``forgetless compress`` of tiny-llama on one shipped offline task, on the fixture's good data folder."""
    return cli("compress", *TINY, *method, "--task", "lm-eval", "--lm-eval-tasks", name, "--data-dir", "{gen_data}",
               *extra)


def cases():
    return [
        ("generation suite without a data folder", cli("compress", *TINY, *MAGNITUDE, "--task", "llm-generation"),
         r"task llm-generation reads a data folder only .*--data-dir"),
        ("IFEval prompt file without prompts", generation("no_prompts"), r"ifeval/input_data\.jsonl: has no rows"),
        ("IFEval prompt that is blank", generation("blank_prompt"),
         r"ifeval/input_data\.jsonl line 1: needs a non-empty prompt"),
        ("GSM8K whose answers are empty", generation("empty_answers"),
         r"gsm8k/test\.jsonl line 1: needs a question and an answer ending in '#### N'"),
        ("SAMSum whose summaries are empty", generation("empty_summaries"),
         r"samsum/validation_context_response\.jsonl line 1: field 'context' or 'response' is empty"),
        ("TweetQA whose answers are empty", generation("empty_tweet_answers"),
         r"tweetqa/dev\.json record 1: needs an Answer list with a non-empty answer"),
        ("passkey length past the model's window, named", lm_eval_task("passkey_512_offline"),
         r"--lm-eval-tasks passkey_512_offline: its prompts of about 512 tokens need a window of 582 .* at most 512 "
         r"tokens .*name passkey_256_offline"),
        ("request window past the model's context", generation("gen_data", "--perplexity-window", "4096"),
         r"--perplexity-window 4096: model 'tiny-llama' takes at most 512 tokens"),
        ("XSum evaluated and calibrated on by default", lm_eval_task("xsum_offline", method=("--method", "wanda",
                                                                                           "--recovery", "none")),
         r"default calibration texts .* are the documents xsum_offline evaluates: give --train FILE"),
        ("perplexity windows on the generation suite", generation("gen_data", "--perplexity-windows", "4"),
         r"--perplexity-windows: applies to --task llm-zero-shot, lm-eval, not llm-generation"),
    ]


def generation_paths(root: Path) -> dict:
    """The good data folder and one folder per broken set."""
    broken = {"no_prompts": {"ifeval": []},
              "blank_prompt": {"ifeval": [{"key": 1, "prompt": "  ", "instruction_id_list": ["punctuation:no_comma"],
                                           "kwargs": [{}]}]},
              "empty_answers": {"gsm8k": [{"question": "How many?", "answer": ""}]},
              "empty_summaries": {"samsum": [{"context": "A: hi\r\nB: hello", "response": ""}]},
              "empty_tweet_answers": {"tweetqa": [{"Question": "who?", "Answer": [""], "Tweet": "a tweet", "qid": "1"}]}}
    paths = {"root": str(root), "gen_data": str(write_generation_data(root / "good"))}
    paths.update({name: str(write_generation_data(root / name, **rows)) for name, rows in broken.items()})
    return paths


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(tmp_path_factory, one_thread):
    return generation_paths(tmp_path_factory.mktemp("bad-generation") / "in")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_generation_suite_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
