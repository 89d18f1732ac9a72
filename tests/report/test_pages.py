"""The report pages (issue 20): verdict and headline numbers with intervals, the summary panel's
colours, the Pareto front, `forgetless report` (re-render from report.json + predictions.jsonl,
no torch), `forgetless compare` (side by side, output rule, refusals) and the sweep's page
(warnings, meaningless F_bias, levels named by their option, sweep.html, pareto.png)."""
import json
import shutil
import subprocess
import sys

import re

import pytest
from markdown_it import MarkdownIt

from forgetless.cli import main
from forgetless.report.headline import headline_numbers, verdict
from forgetless.report.pareto import pareto_front
from forgetless.report.summary import summary_panel
from typed_cards import typed_card


def _card(base_dev=0.80, comp_dev=0.769, base_ch=0.60, comp_ch=0.475, meaningful=True, speedup=(1.9, 1.7, 2.1),
          warnings=()):
    iv = lambda v: {"accuracy": v, "low": v - 0.05, "high": v + 0.05, "n": 200}  # noqa: E731
    return {"task": {"metric": "accuracy", "name": "sst2"},
            "sets": {"dev": {"base": {"accuracy": base_dev, "n": 200}, "compressed": {"accuracy": comp_dev, "n": 200}}},
            "challenge": {"sets": ["advglue"], "base": base_ch, "compressed": comp_ch},
            "hard_easy": {"base": None, "compressed": None},
            "bias": {"f_bias": 1.5, "meaningful": meaningful},
            "intervals": {"sets": {"dev": {"base": iv(base_dev), "compressed": iv(comp_dev)}},
                          "challenge": {"base": iv(base_ch), "compressed": iv(comp_ch)},
                          "f_bias": {"f_bias": 1.5, "low": 1.2, "high": 1.9}},
            "params": {"base": {"total": 1000}, "compressed": {"total": 500}, "ratio": 0.5, "nonzero_ratio": 0.5},
            "speed": {"throughput_per_s": {"speedup": speedup[0]}, "meaningful": True, "mode": "forward",
                      "timing": {"throughput": {"speedup": {"speedup": speedup[0], "low": speedup[1],
                                                            "high": speedup[2], "measurable": speedup[1] > 1}}}},
            "warnings": list(warnings)}


def test_verdict_line_hand_computed():
    assert verdict(typed_card(_card())) == "lost 3.1 points on dev, 12.5 on advglue — loses more on the challenge set"
    assert verdict(typed_card(_card(comp_ch=0.62, warnings=["w"]))) == \
        "lost 3.1 points on dev, gained 2.0 points on advglue — loses less on the challenge set (1 warning: read them first)"
    assert verdict(typed_card(_card(comp_dev=0.78, comp_ch=0.585))) == \
        "lost 2.0 points on dev, 1.5 on advglue — changes about as much on both"
    assert verdict(typed_card(_card(comp_dev=0.80, comp_ch=0.60))) == "no net change on dev and on advglue"  # no paired intervals
    n = headline_numbers(typed_card(_card()))
    assert n["dev"]["compressed"] == {"value": 0.769, "low": pytest.approx(0.719), "high": pytest.approx(0.819)}
    assert n["f_bias"] == {"value": 1.5, "low": 1.2, "high": 1.9, "meaningful": True}
    assert n["speedup"]["measurable"] and n["params"]["ratio"] == 0.5


def test_the_verdict_states_paired_intervals_and_not_measurable():
    """With the paired interval of each change: stated, and "not measurable" when it includes 0 (a
    change that is not measurable is not compared with the other); an LLM suite's mean likewise."""
    delta = lambda v, low, high: {"value": v, "low": low, "high": high, "n": 200}  # noqa: E731
    card = _card()
    card["intervals"]["delta"] = {"sets": {"dev": delta(-0.031, -0.07, 0.005)}, "challenge": delta(-0.125, -0.2, -0.05)}
    assert verdict(typed_card(card)) == ("-3.1 points [-7.0, +0.5] on dev: not measurable (the interval includes 0), lost 12.5 "
                             "points [-20.0, -5.0] on advglue")
    card["intervals"]["delta"]["sets"]["dev"] = delta(-0.031, -0.05, -0.01)
    assert verdict(typed_card(card)) == ("lost 3.1 points [-5.0, -1.0] on dev, lost 12.5 points [-20.0, -5.0] on advglue — loses "
                             "more on the challenge set")
    llm = {**card, "challenge": None, "bias": None, "hard_easy": None, "llm": {"headline_tasks": ["a", "b", "c", "d"], "headline": {
        "base": {"value": 0.45, "low": 0.4, "high": 0.5}, "compressed": {"value": 0.39, "low": 0.33, "high": 0.45},
        "delta": delta(-0.06, -0.125, 0.01)}}}
    assert verdict(typed_card(llm)) == "-6.0 points [-12.5, +1.0] on the mean of the 4 LLM tasks above chance: not measurable (the interval includes 0)"
    assert headline_numbers(typed_card(llm))["deltas"]["dev"]["low"] == -0.125


def test_the_verdict_says_unchanged_only_when_no_item_changed():
    """Equal accuracies on dev and on the challenge set with items flipped both ways are not "unchanged": each
    change is stated with its paired interval (not measurable); "unchanged" is for an interval of [0, 0]."""
    delta = lambda v, low, high: {"value": v, "low": low, "high": high, "n": 200}  # noqa: E731
    card = _card(comp_dev=0.80, comp_ch=0.60)
    card["intervals"]["delta"] = {"sets": {"dev": delta(0.0, -0.04, 0.04)}, "challenge": delta(0.0, -0.065, 0.06)}
    assert verdict(typed_card(card)) == ("+0.0 points [-4.0, +4.0] on dev: not measurable (the interval includes 0), +0.0 points "
                             "[-6.5, +6.0] on advglue: not measurable (the interval includes 0)")
    card["intervals"]["delta"] = {"sets": {"dev": delta(0.0, 0.0, 0.0)}, "challenge": delta(0.0, 0.0, 0.0)}
    assert verdict(typed_card(card)) == "unchanged on dev and on advglue"
    card["intervals"]["delta"]["challenge"] = delta(0.0, -0.01, 0.01)
    assert verdict(typed_card(card)) == "unchanged on dev, +0.0 points [-1.0, +1.0] on advglue: not measurable (the interval includes 0)"


def test_summary_panel_colours_deltas_and_greys_what_cannot_be_trusted():
    page = summary_panel(typed_card(_card()))
    # dev: base [75.0, 85.0] and compressed [71.9, 81.9] overlap: grey; challenge [55, 65] vs [42.5, 52.5]: red
    assert '<div class="tile neutral"><div class="label">dev accuracy</div><div class="value">-3.1 pts</div>' in page
    assert '<div class="tile bad"><div class="label">dev accuracy</div>' in summary_panel(typed_card(_card(comp_dev=0.65)))
    assert '<div class="tile bad"><div class="label">challenge: advglue</div><div class="value">-12.5 pts</div>' in page
    assert "base 80.0 [75.0, 85.0]% → 76.9 [71.9, 81.9]%" in page
    assert '<div class="tile bad"><div class="label">F_bias (relative bias)</div><div class="value">1.50</div>' in page
    assert '<div class="tile good"><div class="label">size (parameters)</div><div class="value">0.50×</div>' in page
    assert '<div class="tile good"><div class="label">speedup (throughput)</div><div class="value">1.90×</div>' in page
    grey = summary_panel(typed_card(_card(meaningful=False, speedup=(1.1, 0.8, 1.5), warnings=["base <at> chance"])))
    assert '<div class="tile neutral"><div class="label">F_bias (relative bias)</div>' in grey and "not meaningful" in grey
    assert '<div class="tile neutral"><div class="label">speedup (throughput)</div>' in grey and "includes 1" in grey
    # an interval that includes 1: no coloured speed tile and the figure only with its interval
    assert '<div class="value">not measurable</div><div class="detail">1.10× [0.80, 1.50] not measurable' in grey
    assert re.findall(r"\d\.\d\d×(?! \[)", grey) == ["0.50×"]  # the size ratio; no bare speedup
    card = _card(speedup=(1.0, 0.5, 3.41))
    card["intervals"]["f_bias"].update(low=0.8, high=1.3)  # F_bias interval includes 1: grey too
    page = summary_panel(typed_card(card))
    assert '<div class="tile neutral"><div class="label">F_bias (relative bias)</div>' in page
    assert "includes 1: no measurable change in bias" in page
    assert '<div class="tile neutral"><div class="label">speedup (throughput)</div>' in page
    assert "tile good\"><div class=\"label\">speedup" not in page and "1.00× [0.50, 3.41] not measurable" in page
    assert '<ul class="warnings" title="warnings"><li>base &lt;at&gt; chance</li></ul>' in grey  # escaped


def test_pareto_front_indices():
    points = [(1.0, 0.80), (0.5, 0.78), (0.5, 0.70), (0.3, 0.60), (0.8, 0.60)]
    assert pareto_front(points, fewer_is_better=True) == [3, 1, 0]   # (0.8, 0.60) and (0.5, 0.70) are beaten
    assert pareto_front(points, fewer_is_better=False) == [0]        # more x is better: (1.0, 0.80) beats all


def _one_line_exit_2(capsys, argv, culprit):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("forgetless: error: ") and culprit in err[0], err
    return err[0]


def test_report_rerenders_from_the_card_alone_in_a_fresh_process(two_runs, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(two_runs[0], run, ignore=shutil.ignore_patterns("model", "work"))
    card_bytes = (run / "report.json").read_bytes()
    for name in ("report.md", "report.html", "metrics.png"):
        (run / name).unlink()
    code = "import sys; from forgetless.cli import main; rc = main(['report', sys.argv[1]]); " \
           "assert 'torch' not in sys.modules and 'transformers' not in sys.modules; sys.exit(rc)"
    done = subprocess.run([sys.executable, "-c", code, str(run)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (run / "report.json").read_bytes() == card_bytes  # the card is read, not rewritten
    page = (run / "report.html").read_text()
    assert page.index('<section class="summary">') < page.index("<h2>Accuracy")
    assert page.count('src="data:image/png;base64,') == 2  # metrics.png and the method's heads plot
    text = (run / "report.md").read_text()
    assert text.index("**Verdict:**") < text.index("## Accuracy") < text.index("![metrics.png]") < text.index("## Size")


def test_report_bad_inputs_are_one_line_exit_2_and_write_nothing(two_runs, tmp_path, capsys):
    _one_line_exit_2(capsys, ["report", str(tmp_path / "nope")], f"OUT {tmp_path / 'nope'}: does not exist")
    _one_line_exit_2(capsys, ["report", str(tmp_path)], "has no report.json")
    run = tmp_path / "run"
    shutil.copytree(two_runs[1], run, ignore=shutil.ignore_patterns("model", "work"))
    before = {p.name: p.stat().st_mtime_ns for p in run.iterdir()}
    rows = (run / "predictions.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row["predicted"] = "entailment" if row["predicted"] != "entailment" else "non-entailment"
    (run / "predictions.jsonl").write_text("\n".join([json.dumps(row)] + rows[1:]) + "\n")
    _one_line_exit_2(capsys, ["report", str(run)], "predictions.jsonl: does not match report.json (dev / base:")
    (run / "predictions.jsonl").unlink()
    _one_line_exit_2(capsys, ["report", str(run)], "report.json names predictions.jsonl, which is missing")
    card = json.loads((run / "report.json").read_text())
    (run / "report.json").write_text(json.dumps({**card, "schema": "other"}))
    _one_line_exit_2(capsys, ["report", str(run)], "report.json: is not a valid report card (card.schema: str 'other' "
                     "is not one of 'forgetless-report-2')")
    (run / "report.json").write_text(json.dumps({**card, "bias": None}))  # a classification card without its bias
    _one_line_exit_2(capsys, ["report", str(run)], "is not a valid report card (card: section bias must be present "
                     "exactly for classification tasks)")
    (run / "report.json").write_text("{not json")
    _one_line_exit_2(capsys, ["report", str(run)], "report.json: is not readable JSON")
    after = {p.name: p.stat().st_mtime_ns for p in run.iterdir() if p.name not in ("report.json",)}
    assert {k: v for k, v in before.items() if k in after and k != "predictions.jsonl"} == \
        {k: v for k, v in after.items() if k != "predictions.jsonl"}  # nothing re-rendered


def test_report_and_compare_read_a_json_integer_where_a_number_is_expected(two_runs, tmp_path, capsys):
    """jq writes 1.0 as 1: a card whose accuracy is the JSON integer 1 is a valid card (the schema says so)."""
    runs = []
    for i, source in enumerate(two_runs):
        run = tmp_path / f"run{i}"
        shutil.copytree(source, run, ignore=shutil.ignore_patterns("model", "work", "predictions.jsonl"))
        card = json.loads((run / "report.json").read_text())
        del card["predictions"]  # no per-example rows to recompute the changed accuracy from
        card["sets"]["dev"]["compressed"]["accuracy"] = card["headline"]["compressed"] = 1
        card["intervals"]["sets"]["dev"]["compressed"].update(accuracy=1, low=1, high=1)
        (run / "report.json").write_text(json.dumps(card))
        runs.append(str(run))
    assert main(["report", runs[0]]) == 0, capsys.readouterr().err
    assert "100.0" in (tmp_path / "run0" / "report.md").read_text()  # the accuracy read as 1.0
    assert main(["compare", *runs, "--out", str(tmp_path / "cmp")]) == 0, capsys.readouterr().err


def test_a_card_out_of_bounds_nested_too_deep_or_not_json_is_one_line(two_runs, tmp_path, capsys):
    """Bounds of the schema (an accuracy in [0, 1], n >= 0), a card nested deeper than any card (a RecursionError
    in Python's JSON reader) and a syntax error (its line and column): one line naming the file, exit 2."""
    run = tmp_path / "run"
    shutil.copytree(two_runs[1], run, ignore=shutil.ignore_patterns("model", "work"))
    card = json.loads((run / "report.json").read_text())
    cases = [(json.dumps({**card, "challenge": {**card["challenge"], "base": 7.0}}),
              "(card.challenge.base: 7.0 is out of range; expected a number in [0, 1])"),
             (json.dumps({**card, "intervals": {**card["intervals"], "n_resamples": -3}}),
              "(card.intervals.n_resamples: -3 is out of range; expected a number >= 0)"),
             ("[" * 100_000 + "]" * 100_000, "report.json: is not a report card (JSON nested thousands of levels deep"),
             (json.dumps({**card, "notes": [json.loads("[" * 200 + "]" * 200)]}), "report.json: is nested 202 levels deep"),
             ('{"schema": "forgetless-report-2",\n  "seed": [1,, 2]}', "report.json: is not readable JSON (line 2, "
                                                                       "column 14: Expecting value)")]
    for text, culprit in cases:
        (run / "report.json").write_text(text)
        _one_line_exit_2(capsys, ["report", str(run)], culprit)
        _one_line_exit_2(capsys, ["compare", str(run), str(two_runs[0]), "--out", str(tmp_path / "cmp")], culprit)
    assert not (tmp_path / "cmp").exists()


def test_compare_two_runs_side_by_side_and_the_output_rule(two_runs, tmp_path, capsys):
    heads, truncate = map(str, two_runs)
    out = tmp_path / "cmp"
    assert main(["compare", heads, truncate, "--out", str(out)]) == 0
    text = (out / "compare.md").read_text()
    cards = [json.loads((run / "report.json").read_text()) for run in two_runs]
    row = next(line for line in text.splitlines() if line.startswith("| heads | heads | scoring_examples=16, prune_count=2"))
    dev = cards[0]["intervals"]["sets"]["dev"]["compressed"]
    assert f"{100 * dev['accuracy']:.1f} [{100 * dev['low']:.1f}, {100 * dev['high']:.1f}]" in row
    change = cards[0]["intervals"]["delta"]["sets"]["dev"]  # the paired interval of the change, "not measurable" …
    assert f"({100 * change['value']:+.1f} [{100 * change['low']:+.1f}, {100 * change['high']:+.1f}]" in row
    size = headline_numbers(typed_card(cards[0]))["size"]  # the saved folder against the teacher's, on disk; heads zero no weight
    assert size["what"] == "the base's float32 folder on disk" and f"| {size['ratio']:.2f}× | – |" in row
    assert ("not meaningful" in row) == (not cards[0]["bias"]["meaningful"])
    assert "| truncate | truncate | layers=1 |" in text and "| heads, truncate | " in text  # one shared base row
    assert "| dev | 16 |" in text and "| challenge | 16 |" in text and "## ⚠ Warnings" in text
    page = (out / "compare.html").read_text()
    assert page.count('src="data:image/png;base64,') == 1 and (out / "pareto.png").stat().st_size > 5000
    _one_line_exit_2(capsys, ["compare", heads, truncate, "--out", str(out)], "pass --overwrite to replace it")
    assert main(["compare", heads, truncate, "--out", str(out), "--overwrite"]) == 0
    _one_line_exit_2(capsys, ["compare", heads, truncate, "--out", heads], f"--out {heads}: is an input")
    _one_line_exit_2(capsys, ["compare", heads, truncate, "--out", str(two_runs[0].parent)], "contains an input")
    _one_line_exit_2(capsys, ["compare", heads, "--out", str(tmp_path / "x")], "give two or more run folders")
    other = tmp_path / "other"
    shutil.copytree(two_runs[1], other, ignore=shutil.ignore_patterns("model", "work"))
    card = json.loads((other / "report.json").read_text())
    card["task"]["name"] = "rte"
    (other / "report.json").write_text(json.dumps(card))
    _one_line_exit_2(capsys, ["compare", heads, str(other), "--out", str(tmp_path / "y")],
                     "compare: heads (task synthetic) and other (task rte) share no evaluation set")
    assert not (tmp_path / "y").exists()


def test_sweep_page_carries_warnings_and_names_the_level(two_runs, tmp_path):
    from forgetless.sweep.table import _record, _summary, write_sweep

    cards = [json.loads((run / "report.json").read_text()) for run in two_runs]
    cards[1]["method"]["config"]["ratio"], cards[1]["seed"] = 0.4, 1  # a second level of the heads option
    records = [_record(typed_card(cards[0]), "ratio"), _record(typed_card({**cards[1], "method": cards[0]["method"]}), "ratio")]
    records[1]["level"] = 0.4
    setup = {"method": "heads", "method_options": {}, "level_option": "ratio", "student_init": "teacher",
             "seeds": [0, 1], "train": {"epochs": 1}, "teacher_train": {"epochs": 1}}
    summary = _summary(records, {"name": "synthetic", "protocol": "p", "train": 64, "sets": {}}, setup, {}, None)
    write_sweep(summary, tmp_path)
    text = (tmp_path / "sweep.md").read_text()
    assert "| objective | ratio | size | speedup |" in text and "| ce | 0.2 |" in text
    meaningless = not cards[0]["bias"]["meaningful"]
    assert ("(not meaningful)" in text) == meaningless
    assert "## ⚠ Warnings of the runs" in text and "— ce ratio=0.2 seed 0, ce ratio=0.4 seed 1" in text
    assert summary["plots"][0] == "accuracy_vs_ratio.png" and summary["plots"][-1] == "pareto.png"
    page = (tmp_path / "sweep.html").read_text()
    assert page.count('src="data:image/png;base64,') == len(summary["plots"])


# ----- text from users' data is shown, never run (issue 32) ---------------------------------------------------
SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "ul", "ol", "li", "table",
             "thead", "tbody", "tr", "th", "td", "img", "code", "strong", "em", "section", "div", "pre", "hr", "br"}


def _inert(page: str, shown: list[str], plots: str = "data:image/png;base64,") -> str:
    """``page`` parsed as a browser would: only the renderer's own tags, no event attribute, no link,
    images only plots (``plots``: embedded; a regular expression: the folder's own files); and every
    hostile string still there as visible text (returned)."""
    from html.parser import HTMLParser

    class Page(HTMLParser):
        tags, text = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, dict(attrs)))

        def handle_data(self, data):
            self.text.append(data)

    parser = Page()
    parser.tags, parser.text = [], []
    parser.feed(page)
    assert {tag for tag, _ in parser.tags} <= SAFE_TAGS, {tag for tag, _ in parser.tags} - SAFE_TAGS
    for tag, attrs in parser.tags:
        assert not [a for a in attrs if a.startswith("on") or a in ("href", "srcdoc")], (tag, attrs)
        assert attrs.get("style", "text-align:left") in ("text-align:left", "text-align:right"), (tag, attrs)
        assert re.match(plots, attrs.get("src", "data:image/png;base64,")), (tag, attrs)
    text = "".join(parser.text)
    for hostile in shown:
        assert hostile in text, hostile
    return text


def test_tags_in_users_data_are_shown_as_text_in_every_page(tmp_path, capsys):
    """Tags fed through every source that reaches a page — label names and a challenge set name of a
    files task, a data file name and the output folder name given as recipe values, a run folder
    name (compare), a report.json edited to hold <script>, javascript: links and a remote image —
    end up as text in report.html, compare.html and sweep.html: no live tag, attribute or link."""
    from forgetless.sweep.table import _record, _summary, write_sweep

    labels = ["neg<script>alert(1)</script>", "pos<img src=x onerror=alert(2)>"]
    data = tmp_path / "train<svg onload=alert(4)>.tsv"
    data.write_text("sentence\tlabel\n" + "".join(f"text {i}\t{labels[i % 2]}\n" for i in range(8)))
    run = tmp_path / "r1<svg onload=alert(3)>"
    recipe = tmp_path / "hostile.yaml"
    recipe.write_text(json.dumps({  # YAML is a superset of JSON: the values exactly as given
        "model": "tiny-bert", "method": {"name": "truncate", "layers": 1, "recovery": "none"}, "epochs": 1,
        "task": {"name": "files", "train_file": str(data), "dev_file": str(data), "text_a": "sentence",
                 "text_b": "", "labels": labels, "challenge": [f"adv<iframe srcdoc>={data}"]},
        "train_size": 8, "eval_size": 8, "bench_repeats": 1, "bench_seq_len": 16, "no_progress": True}))
    assert main(["run", str(recipe), "--out", str(run)]) == 0, capsys.readouterr().err
    warned = [w for w in json.loads((run / "report.json").read_text())["warnings"] if any(x in w for x in labels)]
    shown = ["adv<iframe srcdoc>", "train<svg onload=alert(4)>.tsv", *warned]  # a label predicted for all: warned
    _inert((run / "report.html").read_text(), shown)

    other = tmp_path / "r2<img src=x onerror=alert(7)>"  # a report.json holding tags and links, re-rendered
    shutil.copytree(run, other, ignore=shutil.ignore_patterns("model", "work"))
    card = json.loads((other / "report.json").read_text())
    hostile = ["<script>alert(5)</script>", "[click](javascript:alert(6))", "![pixel](http://tracker.example/p.png)",
               "<a href=\"javascript:alert(8)\">x</a>"]
    card["notes"] = card["notes"] + hostile
    card["warnings"] = card["warnings"] + ["<script>alert(9)</script>"]
    (other / "report.json").write_text(json.dumps(card))
    assert main(["report", str(other)]) == 0
    _inert((other / "report.html").read_text(), [*shown, "<script>alert(5)</script>", "<script>alert(9)</script>",
                                                "javascript:alert(6)", "http://tracker.example/p.png"])

    assert main(["compare", str(run), str(other), "--out", str(tmp_path / "cmp")]) == 0
    _inert((tmp_path / "cmp" / "compare.html").read_text(), [run.name, other.name, "adv<iframe srcdoc>",
                                                             "<script>alert(9)</script>"])
    # the Markdown files as GitHub and the hub render them, raw HTML on (issue 43): report.md, compare.md and
    # model/README.md (what --push-to-hub uploads) show the same strings as text
    github = MarkdownIt("commonmark", {"html": True}).enable("table")
    local = r"(data:image/png;base64,|[\w.-]+\.png$)"
    _inert(github.render((run / "report.md").read_text()), shown, local)
    _inert(github.render((other / "report.md").read_text()), [*shown, *hostile], local)
    _inert(github.render((tmp_path / "cmp" / "compare.md").read_text()), [run.name, "<script>alert(9)</script>"], local)
    model_card = (run / "model" / "README.md").read_text().split("\n---\n", 1)[1]  # the body under its YAML
    _inert(github.render(model_card), ["adv<iframe srcdoc>", *warned], local)

    records = [_record(typed_card(card), "layers")]
    setup = {"method": "truncate", "method_options": {"stack": "<svg onload=alert(10)>"}, "level_option": "layers",
             "student_init": "teacher", "seeds": [0], "train": {"epochs": 1}, "teacher_train": {"epochs": 1}}
    task = {"name": "files<script>alert(11)</script>", "protocol": card["task"]["protocol"], "train": 8, "sets": {}}
    write_sweep(_summary(records, task, setup, {}, None), tmp_path / "sweep", plots=False)
    _inert((tmp_path / "sweep" / "sweep.html").read_text(), ["<svg onload=alert(10)>", "files<script>alert(11)</script>",
                                                             "<script>alert(9)</script>"])


def test_a_speedup_whose_interval_includes_1_is_never_shown_alone(two_runs):
    """report.md's speed table, the verdict, the summary panel and the model card summary show a
    speedup whose interval includes 1 only with that interval and "not measurable"."""
    from forgetless.report.markdown import render_markdown
    from forgetless.report.model_card import model_card_summary

    card = json.loads((two_runs[0] / "report.json").read_text())
    speed = card["speed"]
    speed["meaningful"] = True
    for part, key in (("latency", "latency_ms"), ("throughput", "throughput_per_s")):
        speed[key]["speedup"] = 4.99
        speed["timing"][part]["speedup"].update(speedup=4.99, low=0.5, high=3.41, measurable=False)
    text = render_markdown(typed_card(card))
    section = text.split("## Speed")[1].split("\n## ")[0]
    assert "| 4.99× [0.50, 3.41] not measurable |" in section
    assert re.findall(r"\d\.\d\d×(?! \[)", section) == []  # every speedup figure with its interval
    assert "no measurable speedup (throughput 4.99× [0.50, 3.41] not measurable)" in text
    assert re.findall(r"4\.99×(?! \[)", text + summary_panel(typed_card(card))) == []
    assert '<div class="value">not measurable</div>' in summary_panel(typed_card(card))
    summary = model_card_summary(typed_card(card))["speed"]
    assert summary["throughput speedup [95% interval]"] == "4.99× [0.50, 3.41] not measurable"


def test_size_tile_compares_the_saved_folder_with_the_file_the_user_started_from(tmp_path):
    from forgetless.metrics.size import started_from

    gguf = tmp_path / "model.Q4_1.gguf"
    with open(gguf, "wb") as handle:  # sparse: only its size is read
        handle.truncate(98_000_000)
    folder = tmp_path / "fp32"
    folder.mkdir()
    with open(folder / "model.safetensors", "wb") as handle:
        handle.truncate(541_600_000)
    start = started_from({"provenance": {"source_file": str(gguf), "model": "SmolLM2"}}, folder)
    assert start == {"path": str(gguf), "bytes": 98_000_000, "what": "SmolLM2 as given (model.Q4_1.gguf)"}
    assert started_from({}, folder)["bytes"] == 541_600_000 and started_from({}, None) is None
    card = _card()
    card["params"]["base"].update(started_from=start, disk_bytes=541_600_000)
    card["params"]["compressed"]["disk_bytes"] = 174_300_000
    card["params"]["stored"] = {"quantized": {"bits_per_weight": 4.5}}
    page = summary_panel(typed_card(card))
    assert '<div class="tile bad"><div class="label">size on disk</div><div class="value">1.78×</div>' in page
    assert "174.3 MB vs 98.0 MB (SmolLM2 as given (model.Q4_1.gguf)); 0.32× its float32 folder; 4.50 bits per " \
           "quantized weight" in page


def test_inert_markdown_by_hand():
    """Tags, autolinks, links and link definitions are broken outside code; code spans and fences stay as
    written where a renderer pairs them as inert does, else they are escaped too; the folder's plots stay."""
    from forgetless.report.inert import inert

    assert inert("set <script>x</script> `a<b>` [c](javascript:d) [e]: f <!-- p < 0.001") == \
        "set &lt;script>x&lt;/script> `a<b>` [c]\\(javascript:d) [e]\\: f &lt;!-- p < 0.001"
    assert inert("a ` b\nc ` <script> `") == "a ` b\nc ` &lt;script> `"  # the renderer pairs across the lines
    assert inert("\\` <i> `") == "\\` &lt;i> `"                          # an escaped backtick opens no span
    assert inert("```\n<kept>\n```\n<x>") == "```\n<kept>\n```\n&lt;x>"
    assert inert("![metrics.png](metrics.png)\n![x](http://t/p.png)") == "![metrics.png](metrics.png)\n![x]\\(http://t/p.png)"
    assert inert("see [hub](https://h/x).", keep=("see [hub](https://h/x).",)) == "see [hub](https://h/x)."
