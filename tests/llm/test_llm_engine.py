"""The LLM tasks run through lm-evaluation-harness: forgetless's per-item numbers equal
``lm_eval.simple_evaluate``'s own (multiple choice and rolling perplexity) on a tiny random Llama;
the items are seeded and the task's, not the model's; WikiText-2 perplexity follows the SparseGPT /
Wanda script; bad data and a missing lm-eval are one clear error before any model is loaded."""
import sys

import pytest
import torch

from forgetless.cli import main
from forgetless.config import EvalConfig
from forgetless.data.tasks import load_task
from forgetless.kinds.causal_lm import CausalLMKind
from forgetless.metrics.perplexity import perplexity
from forgetless.models.loading import load_causal_lm

from llm_data import write_llm_data

lm_eval = pytest.importorskip("lm_eval")
MULTIPLE_CHOICE = ["arc_easy_offline", "arc_challenge_offline", "hellaswag_offline", "piqa_offline",
                   "winogrande_offline", "openbookqa_offline"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_llm_data(tmp_path_factory.mktemp("llm-data"))


@pytest.fixture(scope="module")
def tiny(minilm_tokenizer):
    model, tok = load_causal_lm("tiny-llama", tokenizer=minilm_tokenizer, seed=3)
    with torch.no_grad():
        model.lm_head.weight.mul_(40)  # a random Llama far from uniform: choices get distinct scores
    return model.eval(), tok


def _lm_evals_own(model, tok, data, task, window):
    """lm-eval on its own: a fresh TaskManager over the shipped YAMLs, its HFLM on the same model and batch
    sizes (the WordPiece tokenizer has no BOS / EOS: both runs start a rolling window with [CLS])."""
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from forgetless.llm.engine import TASKS_DIR

    manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata={"data_dir": str(data)})
    samples, results = {}, {}
    for names, batch in ((MULTIPLE_CHOICE, 4), (["wikitext_offline"], 1)):
        lm = HFLM(pretrained=model, tokenizer=tok, batch_size=batch, max_length=window, prefix_token_id=tok.cls_token_id)
        out = simple_evaluate(model=lm, tasks=names, task_manager=manager, log_samples=True, bootstrap_iters=0,
                              samples={n: task.suite.sets[n].items for n in names})
        samples.update({n: sorted(out["samples"][n], key=lambda s: s["doc_id"]) for n in names})
        results.update(out["results"])
    return samples, results


@pytest.mark.parametrize("exact", [True, False], ids=["exact-lm-eval", "shared-context"])
def test_per_item_numbers_equal_lm_evals_own(data, tiny, exact):
    """--exact-lm-eval gives lm-eval's numbers bit for bit; shared-context scoring every choice's and
    window's log-likelihood within records.TOLERANCE per scored token and the same acc / acc_norm on every item but near ties."""
    from forgetless.llm.records import near_tie
    from forgetless.llm.records import TOLERANCE

    model, tok = tiny
    task = load_task("lm-eval", data_dir=str(data), lm_eval_tasks=MULTIPLE_CHOICE + ["wikitext_offline"], eval_size=4,
                     seed=0, exact_lm_eval=exact)
    ours = CausalLMKind().evaluate(model, tok, task, EvalConfig(batch_size=4), 128, False)
    assert ours["zero_shot"]["window"] == 512 and ours["zero_shot"]["scoring"] == ("lm-eval" if exact else
                                                                                     "shared-context")
    theirs, aggregate = _lm_evals_own(model, tok, data, task, 512)
    worst, ties = 0.0, 0
    for name, samples in theirs.items():
        records = ours["predictions"][name]["items"]
        assert [r["doc"] for r in records] == [s["doc_id"] for s in samples] == task.suite.sets[name].items
        if name == "wikitext_offline":  # every token of the document is scored
            lls = [([r["ll"]], [s["filtered_resps"][0]], [len(tok(s["doc"]["page"])["input_ids"])])
                   for r, s in zip(records, samples)]
        else:
            lls = [(r["ll"], [x[0] for x in s["filtered_resps"]], r.get("tokens", [1] * len(r["ll"])))
                   for r, s in zip(records, samples)]
            assert exact or all(len(r["tokens"]) == len(r["ll"]) and min(r["tokens"]) >= 1 for r in records)
        if exact:
            assert [mine for mine, _, _ in lls] == [lm_evals for _, lm_evals, _ in lls]
        worst = max([worst] + [abs(a - b) / n for mine, lm_evals, tokens in lls
                               for a, b, n in zip(mine, lm_evals, tokens)])
        for r, s in zip(records if name != "wikitext_offline" else [], samples):
            for metric in ("acc", "acc_norm") if "acc_norm" in s else ("acc",):
                tie = near_tie(r, metric)
                ties += tie
                assert r[metric] == s[metric] or tie, (name, r["doc"], metric)
        if name != "wikitext_offline" and exact:
            assert ours["sets"][name]["acc"] == pytest.approx(aggregate[name]["acc,none"], abs=1e-12)
    assert worst <= (0.0 if exact else TOLERANCE) and (exact or worst > 0)  # per token: a real difference, within it
    assert ours["sets"]["wikitext_offline"]["word_perplexity"] == pytest.approx(
        aggregate["wikitext_offline"]["word_perplexity,none"], rel=0 if exact else 1e-5)
    assert ties == sum(sum(ours["sets"][n]["near_ties"].values()) for n in MULTIPLE_CHOICE)
    assert {r["acc"] for n in MULTIPLE_CHOICE for r in ours["predictions"][n]["items"]} == {0, 1}  # not degenerate


def test_items_are_seeded_and_the_tasks_not_the_models(data):
    first = load_task("llm-zero-shot", data_dir=str(data), eval_size=3, seed=0)
    again = load_task("llm-zero-shot", data_dir=str(data), eval_size=3, seed=0)
    for name, s in first.suite.sets.items():
        assert s.items == again.suite.sets[name].items and len(s.items) == min(3, s.size)
        assert s.items == sorted(s.items) and set(s.items) <= set(range(s.size))
    every = load_task("llm-zero-shot", data_dir=str(data), seed=0)
    assert every.suite.sets["arc_easy_offline"].items == list(range(6))  # the NYSED row without options is dropped
    assert "wikitext_offline" not in every.suite.sets  # one perplexity protocol: lm-eval's wikitext is opt-in
    assert load_task("lm-eval", data_dir=str(data), lm_eval_tasks=["wikitext_offline"]).suite.sets[
        "wikitext_offline"].size == 2  # two articles
    # the WikiText-2 windows are capped apart from the items: 40 by default, --perplexity-windows N
    assert first.suite.perplexity.cap == every.suite.perplexity.cap == 40
    assert load_task("llm-zero-shot", data_dir=str(data), eval_size=3, perplexity_windows=7).suite.perplexity.cap == 7
    assert load_task("llm-zero-shot", data_dir=str(data), eval_size=3, perplexity_windows=0).suite.perplexity is None


def test_perplexity_windows_where_no_wikitext_would_be_scored_is_one_error(data, tmp_path, monkeypatch):
    """lm-eval tasks without the data folder's WikiText-2: --perplexity-windows N would be ignored, so it is refused
    (0 asks for nothing and is taken)."""
    from forgetless.errors import ConfigError

    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)
    with pytest.raises(ConfigError, match=r"^perplexity_windows=5: task lm-eval scores WikiText-2 perplexity .* no "
                                          r"data_dir is given"):
        load_task("lm-eval", lm_eval_tasks=["piqa_offline"], perplexity_windows=5)
    with pytest.raises(ConfigError, match=rf"{tmp_path}/wikitext2/wiki.test.raw is missing"):
        load_task("lm-eval", data_dir=str(tmp_path), lm_eval_tasks=["piqa_offline"], perplexity_windows=5)
    assert load_task("lm-eval", data_dir=str(data), lm_eval_tasks=["piqa_offline"], perplexity_windows=0).suite.perplexity \
        is None


def test_wikitext_perplexity_is_the_sparsegpt_wanda_loop(tiny):
    model, tok = tiny
    text = "\n\n".join(["the doctor saw the lawyer near the old bank", "a second line of text about the river"] * 6)
    ours = perplexity(model, tok, text, window=16, batch_size=3)
    # the papers' script (SparseGPT llama_eval / Wanda eval_ppl_wikitext), written out
    ids = tok(text, return_tensors="pt")["input_ids"]
    samples = ids.numel() // 16
    nlls = []
    with torch.no_grad():
        for i in range(samples):
            batch = ids[:, i * 16:(i + 1) * 16]
            logits = model(batch).logits
            loss = torch.nn.CrossEntropyLoss()(logits[:, :-1].reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
            nlls.append(loss.float() * 16)
    reference = torch.exp(torch.stack(nlls).sum() / (samples * 16)).item()
    assert ours["perplexity"] == pytest.approx(reference, rel=1e-5)
    assert (ours["windows"], ours["tokens"], ours["dropped"]) == (samples, ids.numel(), ids.numel() - 16 * samples)


def _compress(data, out, *extra):
    return main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "magnitude", "--sparsity", "0.5",
                 "--recovery", "none", "--task", "llm-zero-shot", "--data-dir", str(data), "--eval-size", "2",
                 "--no-progress", "--out", str(out), *extra])


@pytest.fixture
def no_model_load(monkeypatch):
    """Any model load fails loudly: a refused run must stop before it."""
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded")
    monkeypatch.setattr("forgetless.kinds.causal_lm.load_causal_lm", refuse)


def test_missing_or_malformed_data_file_is_one_error_before_any_model(data, tmp_path, capsys, no_model_load):
    import shutil

    broken = tmp_path / "data"
    shutil.copytree(data, broken)
    (broken / "llm/piqa/valid_labeled.jsonl").unlink()
    assert _compress(broken, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "piqa_offline" in err[0] and "piqa/valid_labeled.jsonl: missing" in err[0]
    assert not (tmp_path / "out").exists()
    (broken / "llm/piqa/valid_labeled.jsonl").write_text('{"goal": "x", "sol1": "a", "sol2": "b", "label": 0}\n'
                                                         'not json\n')
    assert _compress(broken, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "valid_labeled.jsonl line 2: not JSON" in err[0]
    (broken / "llm/hellaswag/hellaswag_val_full.txt").write_text("ctx\n7\na\nb\nc\nd\n")
    (broken / "llm/piqa/valid_labeled.jsonl").write_text('{"goal": "x", "sol1": "a", "sol2": "b", "label": 0}\n')
    assert _compress(broken, tmp_path / "out") == 2
    assert "hellaswag_val_full.txt line 2: label must be 0-3" in capsys.readouterr().err


def test_users_task_yaml_with_a_missing_data_file_is_one_error(data, tmp_path, capsys, no_model_load):
    mine = tmp_path / "my_tasks"
    mine.mkdir()
    (mine / "mine.yaml").write_text(
        "task: my_yes_no\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: " + str(tmp_path / "gone.jsonl")
        + "\noutput_type: multiple_choice\ntest_split: test\ndoc_to_text: '{{q}}'\ndoc_to_target: '{{a}}'\n"
        "doc_to_choice: ['no', 'yes']\nmetric_list:\n  - metric: acc\n")
    code = main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "magnitude", "--recovery", "none",
                 "--task", "lm-eval", "--lm-eval-tasks", "my_yes_no", "--lm-eval-include", str(mine), "--data-dir",
                 str(data), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "my_yes_no" in err[0] and "mine.yaml" in err[0] and "gone.jsonl" in err[0]
    (mine / "mine.yaml").write_text("task: my_yes_no\ndataset_path: json\n  bad: [indent\n")  # not YAML
    code = main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "magnitude", "--recovery", "none",
                 "--task", "lm-eval", "--lm-eval-tasks", "my_yes_no", "--lm-eval-include", str(mine), "--data-dir",
                 str(data), "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "mine.yaml is not valid YAML" in err[0]



def test_an_unknown_task_name_gets_the_closest_ones(data):
    from forgetless.errors import ConfigError
    from forgetless.llm import engine

    with pytest.raises(ConfigError, match="did you mean arc_easy_offline"):
        engine.load_tasks(["arc_easy_offlin"], engine.task_manager([engine.TASKS_DIR], data, False))


def test_missing_lm_eval_is_one_clear_error(data, tmp_path, capsys, monkeypatch, no_model_load):
    monkeypatch.setitem(sys.modules, "lm_eval", None)  # `import lm_eval` now fails as if it were not installed
    assert _compress(data, tmp_path / "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lm-evaluation-harness" in err[0] and 'pip install "forgetless[llm]"' in err[0]


def test_llm_tasks_do_not_train(data, tmp_path, capsys, no_model_load):
    assert main(["compress", "--model", "tiny-llama", "--method", "magnitude", "--recovery", "none", "--task",
                 "llm-zero-shot", "--data-dir", str(data), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "--base as-is" in capsys.readouterr().err
    assert main(["compress", "--model", "tiny-llama", "--base", "as-is", "--method", "sparsegpt", "--recovery",
                 "fine-tune", "--task", "llm-zero-shot", "--data-dir", str(data), "--out", str(tmp_path / "o"),
                 "--no-progress"]) == 2
    assert "--recovery none" in capsys.readouterr().err


def test_an_evaluation_is_reused_for_the_same_weights_only(data, tiny):
    import copy

    model, tok = tiny
    task = load_task("lm-eval", data_dir=str(data), lm_eval_tasks=["piqa_offline", "openbookqa_offline"], seed=1)
    first = CausalLMKind().evaluate(model, tok, task, EvalConfig(batch_size=4), 128, False)
    again = CausalLMKind().evaluate(model, tok, task, EvalConfig(batch_size=4), 128, False)
    assert not first["zero_shot"]["cache"]["reused"] and again["zero_shot"]["cache"]["reused"]
    assert again["predictions"] == first["predictions"] and again["language_model"] == first["language_model"]
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.model.layers[0].mlp.down_proj.weight[0, 0] += 1.0
    assert not CausalLMKind().evaluate(changed, tok, task, EvalConfig(batch_size=4), 128, False)["zero_shot"]["cache"][
        "reused"]


def test_shipped_yamls_ask_what_lm_evals_own_tasks_ask():
    """The offline tasks' prompts, targets, choices and metrics are lm-eval's own (their readers only
    change where the rows come from): a new lm-eval release that changes a prompt fails here."""
    import importlib.util
    from pathlib import Path

    import yaml
    from lm_eval.tasks.wikitext import preprocess_wikitext
    from lm_eval.tasks.winogrande import preprocess_winogrande

    from forgetless.llm.engine import TASKS_DIR

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: f"!{suffix} {node.value}")
    read = lambda path: yaml.load(Path(path).read_text(), Loader=Loader)  # noqa: E731, S506
    theirs_dir = Path(lm_eval.__file__).parent / "tasks"
    for ours, theirs in (("arc_easy", "arc/arc_easy.yaml"), ("arc_challenge", "arc/arc_easy.yaml"),
                         ("piqa", "piqa/piqa.yaml"), ("openbookqa", "openbookqa/openbookqa.yaml"),
                         ("hellaswag", "hellaswag/hellaswag.yaml")):
        mine, original = read(TASKS_DIR / f"{ours}_offline.yaml"), read(theirs_dir / theirs)
        for key in ("output_type", "doc_to_text", "doc_to_target", "doc_to_choice"):
            assert mine[key] == original[key], (ours, key)
        assert [m["metric"] for m in mine["metric_list"]] == [m["metric"] for m in original["metric_list"]]
    spec = importlib.util.spec_from_file_location("offline", TASKS_DIR / "offline.py")
    offline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(offline)
    assert offline.doc_to_choice is preprocess_winogrande.doc_to_choice
    assert offline.wikitext_detokenizer is preprocess_wikitext.wikitext_detokenizer
    assert offline.process_results is preprocess_wikitext.process_results


def test_the_progress_bar_counts_the_choices_and_windows_it_says(data, tiny, monkeypatch):
    """forgetless's own bars (no lm-eval internals patched): one per kind of request, labelled with the
    items and what is scored; each moves as rows are scored and ends at the total its label gives (the
    choices; lm-eval's rolling windows)."""
    from forgetless.llm import engine, lm

    class Meter:
        def __init__(self, desc, total):
            self.desc, self.total, self.n = desc, total, 0

        def update(self, rows):
            self.n += rows

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

    bars = []

    def meter(label, total, progress):
        bars.append(Meter(label, total))
        return bars[-1]

    monkeypatch.setattr(lm, "meter", meter)
    model, tok = tiny
    task = load_task("lm-eval", data_dir=str(data), lm_eval_tasks=MULTIPLE_CHOICE + ["wikitext_offline"], eval_size=3,
                     seed=0)
    suite = task.suite
    engine.evaluate(model, tok, suite.tasks, {n: s.items for n, s in suite.sets.items()}, 64, 4, progress=True,
                    manager=suite.manager)
    choices = sum(len(t.doc_to_choice(t.eval_docs[i])) for n, t in suite.tasks.items() if n != "wikitext_offline"
                  for i in suite.sets[n].items)
    wiki = suite.tasks["wikitext_offline"]
    tokens = [len(tok(wiki.doc_to_target(wiki.eval_docs[i]), add_special_tokens=False)["input_ids"])
              for i in suite.sets["wikitext_offline"].items]
    windows = sum(-(-n // 64) for n in tokens)  # lm-eval's disjoint windows: ceil(tokens / 64) per document
    assert sorted((b.desc, b.total, b.n) for b in bars) == sorted([
        (f"lm-eval: 18 items, {choices} choices scored (shared-context)", choices, choices),
        (f"lm-eval: {len(tokens)} documents, {windows} windows of 64 tokens scored", windows, windows)])
    assert choices > 18 and windows >= len(tokens)


@pytest.mark.parametrize("progress", [False, True], ids=["no-progress", "progress"])
def test_lm_evals_request_bar_follows_no_progress(data, tiny, capsys, progress):
    """lm-eval's own tqdm bar while it builds the requests (``Task.build_all_requests``) prints nothing on
    stderr under --no-progress (progress False), and is drawn when progress is on."""
    from forgetless.llm import engine

    model, tok = tiny
    suite = load_task("lm-eval", data_dir=str(data), lm_eval_tasks=["arc_easy_offline"], eval_size=2, seed=0).suite
    capsys.readouterr()
    engine.evaluate(model, tok, suite.tasks, {n: s.items for n, s in suite.sets.items()}, 64, 4, progress=progress,
                    manager=suite.manager)
    err = capsys.readouterr().err
    assert ("2/2 [" in err) is progress and ("it/s]" in err) is progress, err


def test_until_interval_stops_at_the_first_round_narrow_enough(data, tiny, monkeypatch):
    """--until-interval: both models scored round by round (here one item per task per round) in the seeded
    order; the run stops at the first round whose confidence sequence of the headline change is narrower
    than the target (recomputed here from the records), every later item unscored; a target below what the
    sequence gives before the last item scores every item (the smallest task's: the change is then exact)."""
    import copy

    import numpy as np

    from forgetless.kinds import stopping
    from forgetless.metrics.sequences import paired_sequence

    monkeypatch.setattr(stopping, "ROUND", 1)
    model, tok = tiny
    other = copy.deepcopy(model)
    with torch.no_grad():
        other.model.layers[1].mlp.down_proj.weight.mul_(0.2)
    models = {"base": model, "compressed": other}
    for target, everything in ((185.0, False), (0.5, True)):
        task = load_task("llm-zero-shot", data_dir=str(data), seed=2, until_interval=target, perplexity_windows=1)
        results = CausalLMKind().evaluate_pair(models, tok, task, EvalConfig(batch_size=4), False)
        status = results["base"]["zero_shot"]["stopping"]
        assert results["compressed"]["zero_shot"]["stopping"] == status and status["population_per_task"] == 3
        done, suite = status["items_per_task"], task.suite
        orders = {n: stopping._order(suite.sets[n].items, n, suite.seed)[:3] for n in suite.sets}
        for name, order in orders.items():
            for role in models:
                assert [r["doc"] for r in results[role]["predictions"][name]["items"]] == sorted(order[:done])
        widths = []
        for t in range(1, done + 1):
            correct = {role: {n: {r["doc"]: r[results[role]["predictions"][n]["primary"]]
                                  for r in results[role]["predictions"][n]["items"]} for n in orders} for role in models}
            rounds = np.mean([[correct["compressed"][n][d] - correct["base"][n][d] for d in orders[n][:t]]
                              for n in status["headline_tasks"]], axis=0)
            widths.append(100 * paired_sequence(rounds, 0.95, 3)["width"])
        assert status["reached"] and status["width_points"] == pytest.approx(widths[-1]) and widths[-1] < target
        assert all(w >= target for w in widths[:-1]) and (done == 3) is everything and status["exhausted"] is everything
        assert everything or done < 3
        assert results["base"]["language_model"]["windows"] == 1  # the perplexity text once, after the stop


def test_a_group_is_refused_by_name(data, tmp_path):
    from forgetless.errors import ConfigError
    from forgetless.llm import engine

    (tmp_path / "g.yaml").write_text("group: two_tasks\ntask:\n  - piqa_offline\n  - openbookqa_offline\n")
    manager = engine.task_manager([engine.TASKS_DIR, tmp_path], data, False)
    with pytest.raises(ConfigError, match="'two_tasks' is a group or tag of .*openbookqa_offline.*piqa_offline"):
        engine.load_tasks(["two_tasks"], manager)
    assert list(engine.load_tasks(["piqa_offline"], manager)) == ["piqa_offline"]


def test_llm_options_on_another_task_are_one_error(tmp_path, capsys, no_model_load):
    for option in (["--exact-lm-eval"], ["--until-interval", "2"], ["--perplexity-windows", "5"]):
        code = main(["compress", "--model", "tiny-llama", "--task", "synthetic", *option, "--out", str(tmp_path / "o"),
                     "--no-progress"])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and option[0] in err[0] and "llm-zero-shot" in err[0]
    assert main(["compress", "--model", "tiny-llama", "--task", "llm-zero-shot", "--until-interval", "0",
                 "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    assert "--until-interval" in capsys.readouterr().err


def test_the_cache_keys_a_task_by_its_yaml_text_not_its_path(tiny, tmp_path):
    """The same suite read from another checkout (a git worktree, a venv) finds the base's entry; a changed
    YAML does not (issue 52: a findings run in a worktree re-scored a base that main had scored)."""
    from forgetless.llm import cache
    from forgetless.llm.suite import LMEvalSet, LMEvalSuite

    model, tok = tiny
    text = "task: t\ndataset_path: json\noutput_type: multiple_choice\n"
    paths = [tmp_path / "a" / "t.yaml", tmp_path / "b" / "t.yaml", tmp_path / "c" / "t.yaml"]
    for path, body in zip(paths, (text, text, text + "num_fewshot: 0\n")):
        path.parent.mkdir()
        path.write_text(body)

    def key(path):
        suite = LMEvalSuite(tasks={}, sets={"t": LMEvalSet("t", "multiple_choice", 3, [0, 1], str(path), "d")})
        return cache.entry_path(model, tok, suite, batch_size=4)

    assert key(paths[0]) == key(paths[1])
    assert key(paths[0]) != key(paths[2])
    assert key(paths[0]) != key(tmp_path / "missing.yaml")
