"""Bad inputs on lm-eval generation tasks (``generate_until``, issue 56), judged as ``test_bad_inputs_llm.py``
judges its own (``judge``: clear / correct / unclear / traceback / silent / destructive):

* a YAML without a prompt (``doc_to_text``), an item whose prompt or target is empty, sampling asked for,
  a corpus-level metric (BLEU), ``max_gen_toks`` past the model's context: one error before the model loads;
* a prompt that, with its new tokens, does not fit the model's context (lm-eval would cut it from the left
  without a word): one error naming the item, before anything is generated;
* a generation task runs on the command line (``compress``: the card's "what it says" table; ``evaluate``:
  one model's scores), and a base that generates nothing (its end token first) is a warning on the card.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import forgetless

from test_bad_inputs_llm import cli, exit_zero, lm_eval, llama, run_case

ROWS = [{"q": f"Is {i} an even number?", "a": "yes" if i % 2 == 0 else "no"} for i in range(6)]
WRITTEN: dict[str, str] = {}  # the fixture's root → the folder of this module's YAMLs (written once)


def _yaml(name: str, data: Path, *, text: str | None = '"{{q}}"', target: str = '"{{a}}"',
          kwargs: str = "  until: [\"\\n\"]\n  max_gen_toks: 4\n", metric: str = "exact_match") -> str:
    return (f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
            "output_type: generate_until\ntest_split: test\n" + (f"doc_to_text: {text}\n" if text else "")
            + f"doc_to_target: {target}\ngeneration_kwargs:\n{kwargs}metric_list:\n  - metric: {metric}\n")


def generation_yamls(p) -> str:
    """This module's task YAMLs and their data, beside the fixture (which must stay unchanged)."""
    root = p["root"]
    if root not in WRITTEN:
        folder = Path(root).parent / "generation-yamls"
        folder.mkdir(parents=True, exist_ok=True)
        files = {"rows": ROWS, "no-target": ROWS[:3] + [{"q": "What is the answer?", "a": " "}],
                 "no-question": ROWS[:2] + [{"q": "", "a": "yes"}],
                 "long": ROWS[:2] + [{"q": "word " * 500, "a": "yes"}],
                 "script": [{"q": "Repeat <script>alert(1)</script> please", "a": "<script>"}] + ROWS[:3]}
        for stem, rows in files.items():
            (folder / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        yamls = {"ok": _yaml("g_ok", folder / "rows.jsonl"), "script": _yaml("g_script", folder / "script.jsonl"),
                 "no-prompt": _yaml("g_noprompt", folder / "rows.jsonl", text=None),
                 "empty-target": _yaml("g_notarget", folder / "no-target.jsonl"),
                 "empty-prompt": _yaml("g_noquestion", folder / "no-question.jsonl"),
                 "sampling": _yaml("g_sampling", folder / "rows.jsonl", kwargs="  do_sample: true\n  temperature: 0.7\n"),
                 "bleu": _yaml("g_bleu", folder / "rows.jsonl", metric="bleu"),
                 "too-many-tokens": _yaml("g_toolong", folder / "rows.jsonl", kwargs="  max_gen_toks: 600\n"),
                 "long-prompt": _yaml("g_longprompt", folder / "long.jsonl", kwargs="  max_gen_toks: 16\n")}
        for stem, text in yamls.items():
            (folder / f"{stem}.yaml").write_text(text)
        WRITTEN[root] = str(folder)
    return WRITTEN[root]


def generation(name, *extra):
    """``forgetless compress`` of tiny-llama on this module's generation task ``name``."""
    def call(p, out):
        return lm_eval(name, "--lm-eval-include", generation_yamls(p), *extra)(p, out)
    return call


def evaluated(name, base=None, **options):
    """``forgetless.evaluate`` of the fixture's tiny Llama object on generation task ``name`` (with ``base``: paired)."""
    def call(p, out):
        given = {} if base is None else {"base": base(p)}
        return forgetless.evaluate(llama(p), "lm-eval", tokenizer=p["tokenizer"], lm_eval_tasks=[name],
                                   lm_eval_include=generation_yamls(p), **given, **options)
    return call


def says_nothing(p):
    """The fixture's tiny Llama whose every next token is its end token (id 2, its config's eos_token_id)."""
    model = llama(p)
    assert model.generation_config.eos_token_id == 2

    def end_first(module, inputs, logits):
        logits = logits.clone()
        logits[..., 2] += 1e4
        return logits

    model.lm_head.register_forward_hook(end_first)
    return model


# ----- what a correct run gave ------------------------------------------------------------------------
def generation_card(result, p, out):
    """The card pairs the generation task item by item, and its pages keep a model's words as text."""
    exit_zero(result, p, out)
    card = json.loads((out / "report.json").read_text())
    entry = card["llm"]["tasks"]["g_script"]
    assert entry["output_type"] == "generate_until" and entry["n"] == 4, entry
    assert set(entry["metrics"]) == {"exact_match"} and entry["metrics"]["exact_match"]["flips"]["n"] == 4
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    answers = [r for r in rows if r["set"] == "g_script"]
    assert len(answers) == 8 and all(isinstance(r["generated"], str) for r in answers)  # each model's answers
    page = (out / "report.md").read_text()
    assert "### What it says: generation tasks, answer by answer" in page
    assert "<script>" not in page and "<script>" not in (out / "report.html").read_text()


def one_models_scores(result, p, out):
    exit_zero(result, p, out)


def warns_of_empty_answers(result, p, out):
    warnings = [w for w in result.warnings if "g_ok: the base's answer to 6 of 6 items is empty" in w]
    assert warnings, result.warnings
    assert result.llm.tasks["g_ok"]["empty_answers"]["base"] == 6


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    return [
        ("gen-compress-runs", generation("g_script", "--speed", "none"), generation_card),
        ("gen-evaluate-one-model", lambda p, out: cli("evaluate", "{llama}", "--task", "lm-eval", "--lm-eval-tasks",
                                                      "g_ok", "--lm-eval-include", generation_yamls(p))(p, out),
         one_models_scores),
        ("gen-base-says-nothing", evaluated("g_ok", base=says_nothing), warns_of_empty_answers),
        ("gen-yaml-without-prompt", generation("g_noprompt"),
         r"^forgetless: error: lm-eval task g_noprompt \(.*no-prompt.yaml\): has no prompt \(doc_to_text\)"),
        ("gen-empty-target", generation("g_notarget"),
         r"g_notarget \(.*\), item 3: its target is empty \(doc_to_target gives ' '\)"),
        ("gen-empty-prompt", generation("g_noquestion"), r"g_noquestion \(.*\), item 2: its prompt is empty"),
        ("gen-sampling", generation("g_sampling"), r"g_sampling \(.*\): its generation_kwargs ask for sampling"),
        ("gen-corpus-metric", generation("g_bleu"), r"g_bleu \(.*\): metric bleu is aggregated over the whole corpus"),
        ("gen-max-gen-toks-past-the-context", generation("g_toolong"),
         r"g_toolong \(.*\): max_gen_toks 600 leaves no room for a prompt in model 'tiny-llama', which takes at most 512"),
        ("gen-prompt-past-the-context", evaluated("g_longprompt"),
         r"^lm-eval task g_longprompt, item 2: its prompt has \d+ tokens, so with max_gen_toks 16 it needs \d+ > the "
         r"model's context of 512 tokens"),
    ]


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_generation_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
