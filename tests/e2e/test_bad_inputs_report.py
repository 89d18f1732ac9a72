"""Bad inputs on the report card's JSON, ``forgetless report`` / ``compare``, the verdict,
``forgetless.evaluate`` and ``apply_streamed`` into one folder twice (issue 54), judged as
``test_bad_inputs_llm.py`` judges its own (``judge``: clear / correct / unclear / traceback / silent /
destructive):

* a card out of the schema's bounds (an accuracy of 7.0 or 1e308, n = -3, NaN), nested deeper than
  any card, or not JSON: one error naming the field path (or the file's line and column);
* a card that is right but written by jq (1.0 as the JSON integer 1) is read;
* the verdict says "unchanged" only when no item changed;
* every argument of ``forgetless.evaluate`` of the wrong type, ``--perplexity-windows`` where no
  WikiText-2 would be scored, ``--until-interval`` on ``forgetless evaluate``: one error before any work;
  ``perplexity_windows=0`` leaves the WikiText-2 windows out; ``git``'s noise stays off the terminal;
* two ``apply_streamed`` calls into one ``out_dir``: one writes, the other is refused.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import forgetless
from forgetless.errors import ForgetlessError
from forgetless.methods.sparsegpt.config import SparseGptConfig
from forgetless.methods.wanda.config import WandaConfig

from bad_llm_files import SMALL, TEXTS
from test_bad_inputs_llm import cli, exit_zero, lm_eval, run_case
from typed_cards import typed_card

RUNS: dict[str, Path] = {}  # the fixture's root → its finished lm-eval run (made once)


# ----- a finished run and its card ----------------------------------------------------------------------
def finished_run(p) -> Path:
    """A small lm-eval compress run beside the fixture (not inside it: the fixture must stay unchanged)."""
    root = p["root"]
    if root not in RUNS:
        run = Path(root).parent / "report-run"
        shutil.rmtree(run, ignore_errors=True)
        exit_zero(lm_eval("t_ok")(p, run), p, run)
        RUNS[root] = run
    return RUNS[root]


def card_of(p) -> dict:
    return json.loads((finished_run(p) / "report.json").read_text())


def changed_card(change):
    """``Card.from_json`` of the run's card after ``change(card)``."""
    def call(p, out):
        card = card_of(p)
        change(card)
        return forgetless.Card.from_json(card)
    return call


def changed_run(change=None, text=None):
    """A copy of the run (beside ``out``) whose report.json is ``change``d, or ``text``."""
    def make(p, out) -> Path:
        run = out.parent / "run-copy"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(finished_run(p), run, ignore=shutil.ignore_patterns("model", "work"))
        card = json.loads((run / "report.json").read_text())
        if change is not None:
            change(card)
        (run / "report.json").write_text(text if text is not None else json.dumps(card))
        return run
    return make


def report_of(make):
    def call(p, out):
        return cli("report", str(make(p, out)))(p, out)
    return call


def compare_of(make):
    def call(p, out):
        return cli("compare", str(make(p, out)), str(finished_run(p)), "--out", "{out}")(p, out)
    return call


def set_value(key, value, role="base"):
    def change(card):
        card["sets"]["t_ok"][role][key] = value
    return change


def jq_written(card: dict) -> None:
    """Every integral float as jq writes it (1.0 → 1, 0.0 → 0), the base's accuracy on t_ok among them (1.0)."""
    card["sets"]["t_ok"]["base"].update(accuracy=1.0, acc=1.0)
    card.pop("predictions")  # its rows would give back 0.5
    def plain(value):
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return int(value) if isinstance(value, float) and value.is_integer() else value
    card.update(plain(copy.deepcopy(card)))


def rendered(result, p, out):
    exit_zero(result, p, out)


# ----- the verdict ---------------------------------------------------------------------------------------
def flipped_both_ways(p, out):
    """Equal accuracies with items flipped both ways: the interval, not "unchanged"."""
    from forgetless.report.headline import verdict

    iv = {"accuracy": 0.5, "low": 0.4, "high": 0.6, "n": 100}
    delta = {"value": 0.0, "low": -0.05, "high": 0.05, "n": 100}
    card = {"task": {"metric": "accuracy", "name": "sst2"},
            "sets": {"dev": {"base": {"accuracy": 0.5, "n": 100}, "compressed": {"accuracy": 0.5, "n": 100}}},
            "challenge": {"sets": ["advglue"], "base": 0.5, "compressed": 0.5},
            "intervals": {"sets": {"dev": {"base": iv, "compressed": iv}}, "challenge": {"base": iv, "compressed": iv},
                          "delta": {"sets": {"dev": delta}, "challenge": delta}},
            "params": {"base": {"total": 10}, "compressed": {"total": 5}, "ratio": 0.5, "nonzero_ratio": 0.5},
            "speed": {"throughput_per_s": {"speedup": 1.9}, "meaningful": True, "mode": "forward"}, "warnings": []}
    return verdict(typed_card(card))


def states_the_interval(result, p, out):
    assert "unchanged" not in result and "[-5.0, +5.0] on dev: not measurable" in result, result


# ----- forgetless.evaluate --------------------------------------------------------------------------------
def evaluate_lm_eval(**options):
    def call(p, out):
        out.parent.mkdir(parents=True, exist_ok=True)  # a data folder without WikiText-2 (and nothing else)
        values = {"lm_eval_tasks": "t_ok", "lm_eval_include": p["yamls"], **options}
        values = {k: (v.format(out=out.parent) if isinstance(v, str) and "{out}" in v else v) for k, v in values.items()}
        return forgetless.evaluate(p["llama"], "lm-eval", **values)
    return call


def data_with_wikitext(p, out) -> str:
    """A data folder beside ``out`` holding only WikiText-2's test file."""
    folder = out.parent / "data"
    (folder / "llm" / "wikitext2").mkdir(parents=True, exist_ok=True)
    (folder / "llm" / "wikitext2" / "wiki.test.raw").write_text(" = Title = \n\n" + " ".join(TEXTS) * 60 + "\n")  # windows to spare
    return str(folder)


def without_perplexity(p, out):
    return evaluate_lm_eval(data_dir=data_with_wikitext(p, out), perplexity_windows=0)(p, out)


def with_two_windows(p, out):
    return evaluate_lm_eval(data_dir=data_with_wikitext(p, out), perplexity_windows=2)(p, out)


def no_language_model(result, p, out):
    assert result.language_model is None and result.sets["t_ok"]["n"] == 6, (result.language_model, result.sets)


def two_windows_scored(result, p, out):
    assert result.language_model is not None and result.language_model["windows"] == 2, result.language_model


def evaluate_outside_git(p, out):
    """``forgetless.evaluate`` on an lm-eval task in a folder that is no git repository, in a fresh process."""
    script = ("import sys, forgetless\nforgetless.evaluate(sys.argv[1], 'lm-eval', lm_eval_tasks='t_ok', "
              "lm_eval_include=sys.argv[2])\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-c", script, p["llama"], p["yamls"]], capture_output=True, text=True,
                          cwd=out.parent, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(forgetless.__file__).parents[1])})


def no_git_noise(result, p, out):
    assert result.returncode == 0, result.stderr[-1000:]
    assert "not a git repository" not in result.stderr, result.stderr[-1000:]


# ----- apply_streamed into one folder twice ---------------------------------------------------------------
def racing(p, out):
    """Two threads stream different methods into one ``out_dir`` at once: ``{method: "ok" | the refusal}``."""
    said = {}

    def one(config):
        try:
            forgetless.apply_streamed(p["llama"], config, calibration=TEXTS, out_dir=out)
            said[config.name] = "ok"
        except ForgetlessError as exc:
            said[config.name] = str(exc)

    threads = [threading.Thread(target=one, args=(config,))
               for config in (WandaConfig(**SMALL), SparseGptConfig(**SMALL))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return said


def one_wins(result, p, out):
    winners = [name for name, said in result.items() if said == "ok"]
    assert len(winners) == 1, result
    loser = next(said for said in result.values() if said != "ok")
    assert "another forgetless run is writing this model folder" in loser or "holds the model of an earlier" in loser, loser
    assert json.loads((out / "forgetless.json").read_text())["metadata"]["method"]["name"] == winners[0]
    assert sorted(x.name for x in out.parent.iterdir()) == ["out"], sorted(x.name for x in out.parent.iterdir())


def while_held(p, out):
    from forgetless.outputs import model_folder_lock

    with model_folder_lock(out):
        return forgetless.apply_streamed(p["llama"], WandaConfig(**SMALL), calibration=TEXTS, out_dir=out)


def cases() -> list[tuple]:
    """``(name, call(p, out), expected)``: a pattern (a refusal) or a check (a correct run)."""
    return [
        # ----- Card.from_json: the schema's bounds
        ("card-accuracy-7", changed_card(set_value("accuracy", 7.0)),
         r"^card\.sets\.t_ok\.base\.accuracy: 7\.0 is out of range; expected a number in \[0, 1\]"),
        ("card-accuracy-1e308", changed_card(set_value("accuracy", 1e308, "compressed")),
         r"^card\.sets\.t_ok\.compressed\.accuracy: 1e\+308 is out of range"),
        ("card-n-negative", changed_card(set_value("n", -3)), r"^card\.sets\.t_ok\.base\.n: -3 is out of range; expected a number >= 0"),
        ("card-acc-nan", changed_card(set_value("acc", float("nan"))), r"^card\.sets\.t_ok\.base\.acc: expected a finite number"),
        ("card-size-negative", changed_card(lambda c: c["task"]["sizes"].update(t_ok=-1)),
         r"^card\.task\.sizes\.t_ok: -1 is out of range"),
        ("card-agreement-over-1", changed_card(lambda c: c["deployment"]["agreement"].update(pooled=1.5)),
         r"^card\.deployment\.agreement\.pooled: 1\.5 is out of range"),
        ("card-seed-negative", changed_card(lambda c: c.update(seed=-1)), r"^card\.seed: -1 is out of range"),
        ("card-jq-integers", changed_card(jq_written), lambda result, p, out: None),
        # ----- forgetless report / compare
        ("report-accuracy-7", report_of(changed_run(set_value("accuracy", 7.0))),
         r"report\.json: is not a valid report card \(card\.sets\.t_ok\.base\.accuracy: 7\.0 is out of range"),
        ("report-n-negative", report_of(changed_run(set_value("n", -3, "compressed"))), r"card\.sets\.t_ok\.compressed\.n: -3"),
        ("report-jq-integers", report_of(changed_run(jq_written)), rendered),
        ("report-nested-deep", report_of(changed_run(text="[" * 100_000 + "]" * 100_000)),
         r"report\.json: is not a report card \(JSON nested thousands of levels deep"),
        ("report-nested-300", report_of(changed_run(lambda c: c["notes"].append(json.loads("[" * 300 + "]" * 300)))),
         r"report\.json: is nested 302 levels deep; a report card is at most 64"),
        ("report-not-json", report_of(changed_run(text='{"schema":\n "forgetless-report-2",,}')),
         r"report\.json: is not readable JSON \(line 2, column 24: Expecting property name"),
        ("compare-accuracy-7", compare_of(changed_run(set_value("accuracy", 7.0))), r"card\.sets\.t_ok\.base\.accuracy: 7\.0"),
        ("compare-nested-deep", compare_of(changed_run(text="{\"a\":" * 50_000 + "1" + "}" * 50_000)),
         r"JSON nested thousands of levels deep"),
        ("compare-jq-integers", compare_of(changed_run(jq_written)), rendered),
        # ----- the verdict
        ("verdict-flips-both-ways", flipped_both_ways, states_the_interval),
        # ----- forgetless.evaluate: every argument's type, before any work
        ("evaluate-lm-eval-tasks-number", evaluate_lm_eval(lm_eval_tasks=42), r"^lm_eval_tasks=42: expected task names"),
        ("evaluate-lm-eval-tasks-numbers", evaluate_lm_eval(lm_eval_tasks=[1, 2]), r"^lm_eval_tasks=\[1, 2\]: expected"),
        ("evaluate-lm-eval-include-number", evaluate_lm_eval(lm_eval_include=5), r"^lm_eval_include=5: expected a folder"),
        ("evaluate-data-dir-number", evaluate_lm_eval(data_dir=3), r"^data_dir=3: expected a folder"),
        ("evaluate-eval-size-text", evaluate_lm_eval(eval_size="3"), r"^eval_size='3': expected a whole number"),
        ("evaluate-columns-with-task-name", lambda p, out: forgetless.evaluate(p["llama"], "synthetic", columns=[1]),
         r"^columns: names the columns of datasets; data is the task name 'synthetic'"),
        ("evaluate-calibration-without-base", evaluate_lm_eval(calibration=TEXTS), r"^calibration: .* needs base="),
        ("evaluate-calibration-number", lambda p, out: forgetless.evaluate(p["llama"], "lm-eval", base=p["llama"],
                                                                           lm_eval_tasks="t_ok", calibration=5),
         r"^calibration: expected a list of texts"),
        ("evaluate-tokenizer-text", lambda p, out: forgetless.evaluate(p["llama"], "synthetic", tokenizer="gpt2"),
         r"^tokenizer: expected a transformers tokenizer, got str"),
        ("evaluate-perplexity-windows-negative", evaluate_lm_eval(perplexity_windows=-1),
         r"^perplexity_windows: -1 is out of range; valid: >= 0"),
        ("evaluate-perplexity-windows-text", evaluate_lm_eval(perplexity_windows="5"), r"^perplexity_windows='5': expected a whole"),
        ("evaluate-perplexity-windows-no-wikitext", evaluate_lm_eval(perplexity_windows=5),
         r"^perplexity_windows=5: task lm-eval scores WikiText-2 perplexity from the data folder's wikitext2/wiki\.test\.raw, "
         r"and no data_dir is given"),
        ("evaluate-perplexity-windows-missing-file", evaluate_lm_eval(perplexity_windows=5, data_dir="{out}"),
         r"^perplexity_windows=5: .*wiki\.test\.raw is missing"),
        ("evaluate-perplexity-windows-zero", without_perplexity, no_language_model),
        ("evaluate-perplexity-windows-two", with_two_windows, two_windows_scored),
        ("evaluate-no-git-noise", evaluate_outside_git, no_git_noise),
        # ----- the command line
        ("cli-perplexity-windows-no-wikitext", lm_eval("t_ok", "--perplexity-windows", "5"),
         r"^forgetless: error: --perplexity-windows 5: task lm-eval scores WikiText-2 perplexity"),
        ("cli-evaluate-until-interval", cli("evaluate", "{llama}", "--task", "lm-eval", "--lm-eval-tasks", "t_ok",
                                            "--lm-eval-include", "{yamls}", "--until-interval", "2"),
         r"unrecognized arguments: --until-interval 2"),
        # ----- apply_streamed into one folder twice
        ("streamed-two-at-once", racing, one_wins),
        ("streamed-while-another-writes", while_held, r"^out_dir=.*/out: another forgetless run is writing this model folder"),
    ]


# ----- pytest ----------------------------------------------------------------------------------------------
CASES = cases()


@pytest.fixture(scope="module")
def paths(llm_files, one_thread):
    return llm_files


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_report_bad_input(case, paths, tmp_path, monkeypatch, record_property):
    run_case(case, paths, tmp_path, monkeypatch, record_property)
