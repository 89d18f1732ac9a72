"""Tasks: label mapping, clear errors on bad input, the synthetic task, mnli-small from shared data."""
import collections

import numpy as np
import pytest

from forgetless.data.files import example_set_from_rows, read_table
from forgetless.data.mnli import MNLI_TO_HANS
from forgetless.data.synthetic import TEMPLATES, synthetic_shortcut_task
from forgetless.data.task import ExampleSet, Task, stratified_split
from forgetless.data.tasks import capped, load_task
from forgetless.errors import ConfigError, DataError
from forgetless.metrics.accuracy import set_metrics


def test_mnli_to_hans_mapping_scores_3way_predictions():
    hans = ExampleSet("hans", ["a"] * 4, [0, 1, 1, 0], ["entailment", "non-entailment"], ["b"] * 4,
                      prediction_map=MNLI_TO_HANS)
    predictions = np.array([0, 1, 2, 2])  # entailment, neutral, contradiction, contradiction
    assert hans.map_predictions(predictions).tolist() == [0, 1, 1, 1]
    metrics = set_metrics(hans, predictions)
    assert metrics["accuracy"] == 0.75
    assert metrics["per_label"] == {"entailment": 0.5, "non-entailment": 1.0}


def test_task_rejects_challenge_without_mapping():
    train = ExampleSet("train", ["a", "b"], [0, 2], ["e", "n", "c"])
    hans = ExampleSet("hans", ["a"], [0], ["entailment", "non-entailment"])
    with pytest.raises(DataError, match="prediction_map"):
        Task("t", ["e", "n", "c"], train, train, {"hans": hans})
    bad = ExampleSet("hans", ["a"], [0], ["entailment", "non-entailment"], prediction_map={0: 0, 1: 1})
    with pytest.raises(DataError, match="every task label"):
        Task("t", ["e", "n", "c"], train, train, {"hans": bad})


def read_example_set(path, name, text_a, label, label_names, text_b=None):
    return example_set_from_rows(read_table(path), name, str(path), text_a, label, label_names, text_b)


def test_bad_sets_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match="empty"):
        ExampleSet("dev", [], [], ["a", "b"])
    with pytest.raises(DataError, match="label id 5"):
        ExampleSet("dev", ["x"], [5], ["a", "b"])
    path = tmp_path / "d.tsv"
    path.write_text("sentence\tlabel\nnice film\tpositive\nbad film\tnegative\n")
    ok = read_example_set(path, "dev", "sentence", "label", ["negative", "positive"], text_b=None)
    assert ok.labels == [1, 0]
    with pytest.raises(DataError, match=r"d.tsv.*unknown label 'positive'"):
        read_example_set(path, "dev", "sentence", "label", ["neg", "pos"], text_b=None)
    with pytest.raises(DataError, match=r"d.tsv.*missing column.*'text'"):
        read_example_set(path, "dev", "text", "label", ["negative", "positive"], text_b=None)
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="e.jsonl: no rows"):
        read_example_set(empty, "dev", "sentence", "label", ["a"])
    broken = tmp_path / "b.jsonl"
    broken.write_text('{"sentence": "x", "label": 0}\n{not json\n')
    with pytest.raises(DataError, match="b.jsonl: unreadable"):
        read_example_set(broken, "dev", "sentence", "label", ["a"])
    with pytest.raises(DataError, match="file not found"):
        read_example_set(tmp_path / "missing.tsv", "dev", "sentence", "label", ["a"])
    with pytest.raises(DataError, match="unsupported file type"):
        (tmp_path / "x.parquet").write_text("x")
        read_example_set(tmp_path / "x.parquet", "dev", "sentence", "label", ["a"])


def test_files_task_via_registry(tmp_path):
    for name in ("train", "dev", "adv"):
        (tmp_path / f"{name}.csv").write_text("s1,s2,y\n\"a, b\",c,yes\nd,e,no\nf,g,yes\n")
    task = load_task("files", train=str(tmp_path / "train.csv"), dev=str(tmp_path / "dev.csv"),
                     challenge={"adv": str(tmp_path / "adv.csv")}, text_a="s1", text_b="s2", label="y",
                     labels=["no", "yes"])
    assert task.train.text_a[0] == "a, b" and task.dev.labels == [1, 0, 1] and list(task.challenges) == ["adv"]
    with pytest.raises(ConfigError, match="unknown task 'mnli-smal'.*Did you mean 'mnli-small'"):
        load_task("mnli-smal")
    with pytest.raises(ConfigError, match="bad options"):
        load_task("synthetic", n_layers=3)


def test_stratified_split_is_seeded_and_stratified():
    labels = [0] * 50 + [1] * 30 + [2] * 20
    a1, b1 = stratified_split(labels, 0.8, seed=3)
    a2, b2 = stratified_split(labels, 0.8, seed=3)
    assert a1 == a2 and b1 == b2 and len(a1) == 80 and not set(a1) & set(b1)
    assert collections.Counter(labels[i] for i in a1) == {0: 40, 1: 24, 2: 16}
    assert stratified_split(labels, 0.8, seed=4)[0] != a1


def test_synthetic_task_properties():
    task = synthetic_shortcut_task(n_train=1000, n_dev=200, n_challenge=400, hard_fraction=0.2, seed=1)
    assert len(task.train) == 1000 and sum(task.train.hard) == 200
    for s in (task.train, task.challenges["challenge"]):
        for label, hard, group in zip(s.labels, s.hard, s.groups):
            _, gold, high_overlap = TEMPLATES[group]
            assert label == gold and hard == ((gold == 0) != high_overlap)
    challenge = task.challenges["challenge"]
    assert collections.Counter(challenge.labels) == {0: 200, 1: 200}
    assert all(TEMPLATES[g][2] for g in challenge.groups)  # only high-overlap pairs, like HANS
    again = synthetic_shortcut_task(n_train=1000, n_dev=200, n_challenge=400, hard_fraction=0.2, seed=1)
    assert again.train.text_a == task.train.text_a
    with pytest.raises(ConfigError):
        synthetic_shortcut_task(hard_fraction=1.5)


def test_capped_is_stratified():
    task = synthetic_shortcut_task(n_train=1000, seed=0)
    small = capped(task.train, 100, seed=0)
    assert 95 <= len(small) <= 105
    assert abs(np.mean(small.labels) - np.mean(task.train.labels)) < 0.05


def test_mnli_small_protocol(shared_data):
    task = load_task("mnli-small", data_dir=shared_data, seed=0, eval_size=600)
    assert len(task.train) + 1964 == 9815 and len(task.dev) <= 600
    assert task.train.hard is not None and 0.3 < np.mean(task.train.hard) < 0.6
    hans = task.challenges["hans"]
    assert hans.label_names == ["entailment", "non-entailment"] and hans.prediction_map == MNLI_TO_HANS
    assert set(hans.groups) == {"lexical_overlap", "subsequence", "constituent"}
    with pytest.raises(DataError, match="does not exist"):
        load_task("mnli-small", data_dir=shared_data + "/nope")


def test_files_task_infers_columns_and_labels_and_says_so(tmp_path, capsys):
    """`--task files` with no --text-a / --text-b / --labels: the text columns and label names come
    from the training file (pairs for sentence1 / sentence2, ids 0..k-1 for numeric labels) and the
    run says what it inferred."""
    from forgetless.data.tasks import load_task

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(f'{{"sentence1": "a{i}", "sentence2": "b{i}", "label": {i % 3}}}\n' for i in range(6)))
    task = load_task("files", train=str(pairs), dev=str(pairs))
    assert task.label_names == ["0", "1", "2"] and task.train.text_b == [f"b{i}" for i in range(6)]
    assert task.train.labels == [0, 1, 2, 0, 1, 2]
    said = capsys.readouterr().err
    assert "inferred from" in said and "text 'sentence1'; second text 'sentence2'; labels 0, 1, 2 (ids" in said
    single = tmp_path / "single.tsv"
    single.write_text("text\tlabel\nok\tpos\nbad\tneg\n")
    task = load_task("files", train=str(single), dev=str(single))
    assert task.label_names == ["neg", "pos"] and task.train.text_b is None and "inferred" in task.protocol
    given = load_task("files", train=str(single), dev=str(single), text_a="text", text_b="", labels=["pos", "neg"])
    assert given.label_names == ["pos", "neg"] and "inferred" not in given.protocol
