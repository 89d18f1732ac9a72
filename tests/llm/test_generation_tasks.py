"""lm-eval ``generate_until`` tasks in forgetless (``llm/generation.py``, ``records.generation_records``,
``report/llm_generation.py``): on a tiny random Llama with a character tokenizer, every answer and every
per-item metric value equals what ``lm_eval.simple_evaluate`` gives with lm-eval's own HFLM on the same
model (the tests' YAMLs in ``generation_tasks/``: lm-eval's exact_match, a task's own process_results with
a list-valued metric); the base's generations are cached; the card's paired numbers are checked by hand
on a small example and its "what it says" lines keep a model's words as text."""
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from forgetless.config import EvalConfig
from forgetless.data.tasks import load_task
from forgetless.kinds.causal_lm import CausalLMKind
from forgetless.metrics.paired import mcnemar_exact
from forgetless.report.llm_generation import generation_lines, generation_task, parting_examples

from any_decoder import char_tokenizer, tiny_model
from typed_cards import typed_card

lm_eval = pytest.importorskip("lm_eval")
YAMLS = Path(__file__).parent / "generation_tasks"
TASKS = ["gen_exact_test", "gen_custom_test"]
EOS = 2


@pytest.fixture(scope="module")
def tiny():
    """A tiny random Llama whose greedy answers vary, some ending at its end token, with a character tokenizer."""
    model = tiny_model("llama", seed=0)
    with torch.no_grad():
        model.lm_head.weight.mul_(8)
        model.lm_head.weight[EOS] += 0.35 * model.lm_head.weight.abs().mean()
    return model.eval(), char_tokenizer()


def _lm_evals_own(model, tok, window: int, items: dict) -> dict:
    """lm-eval on its own: a fresh TaskManager over the tests' YAMLs, its HFLM on the same model, batch size and window."""
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from forgetless.llm.engine import without_environment_report

    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=4, max_length=window)
    with without_environment_report():  # 3 s of `pip list` into results not read here
        out = simple_evaluate(model=lm, tasks=TASKS, task_manager=TaskManager(include_path=str(YAMLS), include_defaults=False),
                              log_samples=True, bootstrap_iters=0, samples=items)
    return {n: sorted(out["samples"][n], key=lambda s: s["doc_id"]) for n in TASKS}, out["results"]


def test_answers_and_per_item_metrics_equal_lm_evals_own(tiny):
    model, tok = tiny
    task = load_task("lm-eval", lm_eval_tasks=TASKS, lm_eval_include=str(YAMLS), eval_size=5, seed=2)
    assert task.suite.sets["gen_custom_test"].items == [0, 2, 3, 4, 5]  # lm-eval numbers its requests 0 … 4
    ours = CausalLMKind().evaluate(model, tok, task, EvalConfig(batch_size=4), 128, False)
    theirs, aggregate = _lm_evals_own(model, tok, ours["zero_shot"]["window"], {n: task.suite.sets[n].items for n in TASKS})
    ended = cut = 0
    for name in TASKS:
        records, filtered = ours["predictions"][name], name == "gen_exact_test"  # logged once per filter
        expected = {}
        for sample in theirs[name]:
            assert sample["resps"][0][0] == next(r["response"] for r in records["items"] if r["doc"] == sample["doc_id"])
            for metric in sample["metrics"]:
                value = sample[metric]
                key = f"{metric},{sample['filter']}" if filtered else metric
                expected.setdefault(sample["doc_id"], {})[key] = [float(v) for v in value] \
                    if isinstance(value, list) else float(value)
        assert [r["doc"] for r in records["items"]] == sorted(expected) == task.suite.sets[name].items
        assert [r["metrics"] for r in records["items"]] == [expected[d] for d in sorted(expected)]
        assert records["metrics"] == (["exact_match,whole", "exact_match,first-letter"] if filtered else
                                      ["has_letter", "char_f1", "per_char"])
        for record in records["items"]:
            ended += record["tokens"][-1] == EOS
            cut += len(tok.decode(record["tokens"], skip_special_tokens=True)) > len(record["response"])
        for metric in records["metrics"]:  # lm-eval's aggregate: the mean over items (over characters for per_char)
            key = metric if filtered else f"{metric},none"
            assert ours["sets"][name]["metrics"][metric] == pytest.approx(aggregate[name][key])
    values = [r["metrics"]["char_f1"] for r in ours["predictions"]["gen_custom_test"]["items"]]
    assert ended and cut and any(v > 0 for v in values)  # the fixture covers end tokens, stop strings, scores > 0
    again = CausalLMKind().evaluate(model, tok, task, EvalConfig(batch_size=4), 128, False)
    assert again["zero_shot"]["cache"]["reused"] and again["predictions"] == ours["predictions"]
    exact = load_task("lm-eval", lm_eval_tasks=TASKS, lm_eval_include=str(YAMLS), eval_size=5, seed=2, exact_lm_eval=True)
    by_lm_eval = CausalLMKind().evaluate(model, tok, exact, EvalConfig(batch_size=4), 128, False)  # its HFLM generates
    for name in TASKS:
        assert [(r["response"], r["metrics"]) for r in by_lm_eval["predictions"][name]["items"]] == \
            [(r["response"], r["metrics"]) for r in ours["predictions"][name]["items"]]


def _records(responses: list[str], metrics: dict, tokens: list[list[int]] | None = None) -> dict:
    items = [{"doc": i, "response": r, "prompt": f"prompt {i}", "tokens": (tokens or [[]] * len(responses))[i],
              "empty": not r.strip(),
              "metrics": {m: values[i] for m, values in metrics.items()}} for i, r in enumerate(responses)]
    return {"output_type": "generate_until", "primary": next(iter(metrics)), "metrics": list(metrics), "items": items}


def test_the_paired_numbers_by_hand():
    base = _records(["a", "b", "", "dog", "cat"], {"exact_match": [1, 1, 0, 0, 1], "f1": [1.0, 0.5, 0.0, 0.2, 1.0],
                                                   "per_instruction": [[1, 1], [0], [1, 0, 1], [0], [1]]},
                    tokens=[[5], [6], [2], [7, 8, 9], [4, 5]])
    comp = _records(["a", "x", "", "dot", "cow"], {"exact_match": [1, 0, 1, 0, 0], "f1": [1.0, 0.0, 0.5, 0.2, 0.4],
                                                   "per_instruction": [[1, 0], [1], [1, 1, 1], [0], [0]]},
                    tokens=[[5], [3], [2], [7, 8, 4], [4, 6]])
    entry = generation_task("t", base, comp, seed=0, n_resamples=200)
    em, f1, inst = (entry["metrics"][m] for m in ("exact_match", "f1", "per_instruction"))
    assert em["score"]["base"]["value"] == pytest.approx(0.6) and em["score"]["compressed"]["value"] == pytest.approx(0.4)
    assert em["score"]["delta"]["value"] == pytest.approx(-0.2)
    assert em["flips"] == {"n": 5, "correct_to_wrong": 2, "wrong_to_correct": 1, "flip_rate": 0.6,
                           "mcnemar_p": mcnemar_exact(2, 1)} and entry["score"] == em["score"]
    assert f1["flips"] is None and f1["score"]["delta"]["value"] == pytest.approx(np.mean([0, -0.5, 0.5, 0, -0.6]))
    low, high = f1["score"]["delta"]["low"], f1["score"]["delta"]["high"]
    assert -0.6 <= low <= f1["score"]["delta"]["value"] <= high <= 0.5
    # one value per instruction: 8 units over 5 items, the mean over units as lm-eval's agg_inst_level_acc
    assert inst["units"] == 8 and not inst["per_item"] and inst["score"]["base"]["value"] == pytest.approx(5 / 8)
    assert inst["score"]["compressed"]["value"] == pytest.approx(5 / 8) and inst["flips"]["correct_to_wrong"] == 2
    assert entry["identical_answers"] == 2 and entry["empty_answers"] == {"base": 1, "compressed": 1}
    assert entry["warnings"] == ["lm-eval task t: the base's answer to 1 of 5 items is empty (it ends at once: an "
                                 "end-of-sequence token or a stop string first); those items compare nothing the "
                                 "base said"]
    # where the answers part, earliest first: item 1 at token 0, item 4 at token 1, item 3 at token 2
    assert [(e["doc"], e["position"], e["shared"], e["base"], e["compressed"]) for e in entry["examples"]] == [
        (1, 0, "", "b", "x"), (4, 1, "c", "at", "ow"), (3, 2, "do", "g", "t")]
    untokenized = [{**r, "tokens": []} for r in base["items"]]  # --exact-lm-eval: lm-eval generated, no tokens kept
    assert [(e["doc"], e["position"]) for e in parting_examples(untokenized, comp["items"])] == [(1, None), (4, None),
                                                                                                (3, None)]


def test_what_it_says_keeps_a_models_words_as_text(tmp_path):
    from forgetless.report.html import render_html

    base = _records(["<script>alert(1)</script> yes", "ok"], {"exact_match": [1, 1]}, tokens=[[1, 2], [3]])
    comp = _records(["<script>alert(2)</script> *no*", "ok"], {"exact_match": [0, 1]}, tokens=[[1, 4], [3]])
    entry = generation_task("t<b>", base, comp, seed=0, n_resamples=100)
    llm = {"tasks": {"t<b>": {"output_type": "generate_until", "n": 2, **entry}}}
    text = "\n".join(generation_lines(llm["tasks"]))
    assert r"| t&lt;b\> | exact\_match | 2 | 100.0 [100.0, 100.0] | 50.0 [0.0, 100.0] |" in text  # the task name too
    assert "<script>" not in text and "<b>" not in text
    assert r"| &lt;script\>alert\( | 1\)&lt;\/script\> yes | 2\)&lt;\/script\> \*no\* |" in text
    page = render_html("\n".join(["# card", *generation_lines(llm["tasks"])]), tmp_path, "card")
    assert "<script>" not in page and "&lt;script&gt;alert(" in page


def test_evaluate_with_divergence_loads_and_hashes_each_model_once(tiny, tmp_path, monkeypatch):
    """``forgetless.evaluate(..., base=, divergence_prompts=)``: each model is loaded (copied) once and its weights
    hashed once, for its evaluation's cache key and the base's answers' alike."""
    import sys

    import forgetless
    from forgetless.kinds.causal_lm import CausalLMKind

    model, tok = tiny
    compressed = tiny_model("llama", seed=1)
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("Say yes.\nCount to three.\n", encoding="utf-8")
    loads, hashed = [], []
    load, state_dict = CausalLMKind.load_model, torch.nn.Module.state_dict

    def counted_load(self, *args, **kwargs):
        loads.append(args[0])
        return load(self, *args, **kwargs)

    def counted_state_dict(self, *args, **kwargs):
        if sys._getframe(1).f_code.co_filename.endswith("llm/cache.py"):
            hashed.append(id(self))
        return state_dict(self, *args, **kwargs)

    monkeypatch.setattr(CausalLMKind, "load_model", counted_load)
    monkeypatch.setattr(torch.nn.Module, "state_dict", counted_state_dict)
    compared = forgetless.evaluate(compressed, "lm-eval", base=model, tokenizer=tok, lm_eval_tasks=["gen_exact_test"],
                                   lm_eval_include=str(YAMLS), divergence_prompts=2, divergence_file=str(prompts),
                                   divergence_max_new_tokens=4)
    assert compared.llm.divergence["prompt_set"]["n"] == 2 and compared.llm.tasks["gen_exact_test"]["n"] == 6
    assert len(loads) == 2 and len(hashed) == len(set(hashed)) == 2


def test_batches_are_bounded_in_rows_and_tokens():
    """Longest prompt first; at most ``batch_size`` rows and ``batch_size × ROW_TOKENS`` tokens of prompt and answer."""
    from forgetless.llm.generation import batches
    from forgetless.llm.scoring import ROW_TOKENS

    contexts = {0: [1] * 40, 1: [1] * 200, 2: [1] * 50, 3: [1] * 100, 4: [1] * 3000}
    assert ROW_TOKENS == 128  # budget 256 tokens at batch size 2
    assert batches(list(contexts), contexts, 20, 2) == [[4], [1], [3, 2], [0]]  # 2 × (100 + 20) ≤ 256 < 2 × 220
    assert batches(list(contexts), contexts, 20, 64) == [[4, 1], [3, 2, 0]]  # 3 × (3000 + 20) > 64 × 128


def test_compare_puts_generation_metrics_and_divergence_side_by_side():
    from forgetless.report.llm_generation import generation_compare

    def card(comp_scores: list[int], kl: float | None) -> dict:
        base = _records(["a", "b", "c", "d"], {"exact_match": [1, 1, 0, 0]})
        comp = _records(["a", "x", "c", "y"], {"exact_match": comp_scores})
        entry = {"output_type": "generate_until", "n": 4, **generation_task("qa", base, comp, seed=0, n_resamples=100)}
        value = {"value": kl, "low": kl, "high": kl}
        divergence = None if kl is None else {
            "prompt_set": {"n": 5}, "kl": value, "top1_agreement": {"value": 0.9, "low": 0.8, "high": 1.0},
            "identical": {"value": 0.4, "low": 0.2, "high": 0.6}, "first_divergence": {"median": 3.0},
            "entropy_thirds": {"high": {"kl": value}}}
        return typed_card({"llm": {"tasks": {"qa": entry}, "divergence": divergence}})

    text = "\n".join(generation_compare({"rtn8": card([1, 1, 0, 0], 0.01), "rtn4": card([0, 1, 0, 1], None)}, ["qa"]))
    assert "| run | qa exact\\_match | identical answers |" in text
    assert "| rtn8 | +0.0 [+0.0, +0.0] no change | 2/4 |" in text
    assert re.search(r"\| rtn4 \| \+0\.0 \[-\d+\.\d, \+\d+\.\d\] not measurable \| 2/4 \|", text)
    assert "| rtn8 | 5 | 0.0100 [0.0100, 0.0100] | 90.0% [80.0, 100.0] | 40.0% [20.0, 60.0] | 3 | 0.0100 [0.0100, 0.0100] |" \
        in text and "| rtn4 | – | – | – | – | – | – |" in text


def test_generation_prompts_are_user_turns_of_the_chat_template_where_there_is_one(tiny):
    """``lm.chat_turns``: each prompt rendered as a user turn with the generation prompt (as ``lm_eval
    --apply_chat_template`` renders a zero-shot prompt); the request's other arguments and identity kept;
    a tokenizer without a template leaves the requests as they are."""
    from lm_eval.api.instance import Instance

    from forgetless.llm.lm import chat_turns

    _, tok = tiny
    asked = [Instance("generate_until", {}, ("2+2=", {"until": ["\n"]}), 0, ("t", 3, 1))]
    assert chat_turns(tok, asked) is asked  # no template: lm-eval's text as it is
    tok.chat_template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}" \
                        "{% if add_generation_prompt %}<assistant>{% endif %}"
    try:
        [turned] = chat_turns(tok, asked)
    finally:
        tok.chat_template = None
    assert turned.args == ("<user>2+2=<assistant>", {"until": ["\n"]})
    assert (turned.task_name, turned.doc_id, turned.idx) == ("t", 3, 0) and asked[0].args[0] == "2+2="


def test_a_generation_suite_has_a_verdict_from_its_paired_changes():
    """A suite of generation tasks has no multiple-choice task to pool: the card's verdict names its measurable
    changes, largest loss first (it said "nothing to compare" on the SmolLM2 generation cards of issue 56)."""
    from forgetless.report.headline import verdict

    def entry(base_scores, comp_scores):
        base = _records([str(i) for i in range(len(base_scores))], {"exact_match": base_scores})
        comp = _records([str(i) for i in range(len(comp_scores))], {"exact_match": comp_scores})
        return {"output_type": "generate_until", "metric": "exact_match", "n": len(base_scores),
                **generation_task("t", base, comp, seed=0, n_resamples=200)}

    lost, kept = entry([1] * 20, [0] * 20), entry([1, 0] * 10, [1, 0] * 10)
    card = typed_card({"llm": {"tasks": {"passkey": lost, "qa": kept}, "headline_tasks": [], "headline": None}})
    assert verdict(card) == ("on the 2 generation tasks: lost 100.0 points [-100.0, -100.0] on passkey exact_match; "
                             "1 not measurable")
    card = typed_card({"llm": {"tasks": {"qa": kept}, "headline_tasks": [], "headline": None}})
    assert verdict(card) == "no measurable change on the 1 generation task (every interval includes 0)"
