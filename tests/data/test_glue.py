"""GLUE + AdvGLUE task loaders (sst2, rte, qnli, qqp) on small fixture folders, error cases, the
Table 1 helper, and (when present) the real shared data folder."""
import json
from pathlib import Path

import pytest

from forgetless.data.glue import advglue_table, qnli_task, qqp_task, rte_task, sst2_task
from forgetless.data.tasks import TASKS, load_task
from forgetless.errors import DataError

REAL = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def data(tmp_path):
    adv = {"sst2": [{"idx": 0, "sentence": "a bad \"film\"", "label": 0}, {"idx": 1, "sentence": "fine", "label": 1}],
           "rte": [{"idx": 0, "sentence1": "p", "sentence2": "h", "label": 1}],
           "qnli": [{"idx": 0, "question": "q?", "sentence": "s.", "label": 0}],
           "qqp": [{"idx": 0, "question1": "a?", "question2": "b?", "label": 1}]}
    write(tmp_path / "advglue/dev.json", json.dumps(adv))
    write(tmp_path / "glue/SST-2/train.tsv", "sentence\tlabel\nit 's \"good\" \t1\nbad \t0\nok \t1\nmeh \t0\n")
    write(tmp_path / "glue/SST-2/dev.tsv", "sentence\tlabel\nnice \t1\nawful \t0\n")
    rte = 'sentence1\tsentence2\tlabel\tidx\n"He said ""hi""."\tHe spoke.\t0\t0\nA\tB\t1\t1\n'
    write(tmp_path / "glue/RTE/train.tsv", rte)
    write(tmp_path / "glue/RTE/dev.tsv", rte)
    qnli = "index\tquestion\tsentence\tlabel\n" + "".join(
        f"{i}\tq{i}?\ts{i}.\t{'entailment' if i % 2 else 'not_entailment'}\n" for i in range(10))
    write(tmp_path / "glue/QNLI/dev.tsv", qnli)
    qqp = "1\t2\t3\tbroken first line 0\n" + "".join(f"{i}\t{i}\t{i + 1}\tq{i}?\tp{i}?\t{i % 2}\n" for i in range(10))
    write(tmp_path / "glue/QQP/qqp_train_heldout_23k_mieseung.tsv", qqp)
    write(tmp_path / "paws/paws_qqp/dev_and_test.tsv", "id\tsentence1\tsentence2\tlabel\n1\tb'It \\'s'\tb\"I 'm\"\t0\n")
    write(tmp_path / "paws/paws_wiki_labeled_final/dev.tsv", "id\tsentence1\tsentence2\tlabel\n1\tx\ty\t1\n")
    return tmp_path


def test_sst2_with_advglue(data):
    task = sst2_task(data)
    assert task.label_names == ["negative", "positive"]
    assert task.train.text_a[0] == "it 's \"good\"" and task.train.labels == [1, 0, 1, 0]
    adv = task.challenges["advglue"]
    assert adv.text_a == ['a bad "film"', "fine"] and adv.labels == [0, 1] and adv.text_b is None
    assert task.pooled == ["advglue"]


def test_rte_reads_csv_quoting(data):
    task = rte_task(data)
    assert task.train.text_a[0] == 'He said "hi".' and task.train.labels == [0, 1]
    assert task.challenges["advglue"].labels == [1] and task.label_names == ["entailment", "not_entailment"]


def test_qnli_split_is_seeded_and_stratified(data):
    a, b = qnli_task(data, seed=3), qnli_task(data, seed=3)
    assert a.train.text_a == b.train.text_a and len(a.train) == 8 and len(a.dev) == 2
    assert sorted(a.dev.labels) == [0, 1]
    assert not set(a.train.text_a) & set(a.dev.text_a)


def test_qqp_skips_malformed_rows_and_has_paws(data):
    task = qqp_task(data)
    assert len(task.train) + len(task.dev) == 10
    assert set(task.challenges) == {"advglue", "paws_qqp", "paws_wiki"}
    paws = task.challenges["paws_qqp"]
    assert paws.text_a == ["It 's"] and paws.text_b == ["I 'm"]
    assert "1 malformed" in task.protocol


def test_registered_in_task_registry(data):
    assert {"sst2", "rte", "qnli", "qqp"} <= set(TASKS.names())
    task = load_task("qnli", data_dir=str(data), seed=0)
    assert task.name == "qnli"


def test_errors(data, tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        rte_task(tmp_path / "nowhere")  # data folder missing
    (data / "glue/QNLI/dev.tsv").unlink()
    with pytest.raises(DataError, match="file not found"):
        qnli_task(data)
    (data / "glue/SST-2/dev.tsv").write_text("sentence\tlabel\nx \tmaybe\n")
    with pytest.raises(DataError, match="unknown label"):
        sst2_task(data)
    (data / "glue/RTE/dev.tsv").write_text("premise\tlabel\nx\t0\n")
    with pytest.raises(DataError, match="missing column"):
        rte_task(data)
    (data / "advglue/dev.json").write_text(json.dumps({"sst2": []}))
    with pytest.raises(DataError, match="no AdvGLUE subset 'qqp'"):
        qqp_task(data)
    with pytest.raises(DataError, match="train_fraction"):
        qqp_task(data, train_fraction=1.0)


def test_advglue_table():
    table = advglue_table({"sst2": {"glue": 0.9, "advglue": 0.3}, "rte": {"glue": 0.6, "advglue": 0.4}})
    assert table["avg_glue"] == pytest.approx(0.75) and table["avg_advglue"] == pytest.approx(0.35)
    assert table["avg_delta"] == pytest.approx(0.4)
    with pytest.raises(DataError):
        advglue_table({"sst2": {"glue": 0.9}})


@pytest.mark.skipif(not (REAL / "advglue/dev.json").is_file(), reason="shared data folder not present")
def test_real_data_sizes():
    sizes = {"sst2": 148, "rte": 81, "qnli": 148, "qqp": 78}
    for name, n_adv in sizes.items():
        task = load_task(name, data_dir=str(REAL), seed=0)
        assert len(task.challenges["advglue"]) == n_adv
    assert len(load_task("sst2", data_dir=str(REAL)).dev) == 872


def test_table1_script_from_report_cards(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("rahp_table1", Path(__file__).resolve().parents[2]
                                                  / "benchmarks" / "rahp_table1.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cards = []
    for name, (g, a) in {"sst2": (0.9, 0.3), "rte": (0.6, 0.4)}.items():
        card = {"task": {"name": name}, "method": {"name": "rahp"},
                "sets": {"dev": {"base": {"accuracy": g}, "compressed": {"accuracy": g - 0.1}},
                         "advglue": {"base": {"accuracy": a}, "compressed": {"accuracy": a}}}}
        write(tmp_path / name / "report.json", json.dumps(card))
        cards.append(module.read_card(tmp_path / name))
    tables = module.table1(cards)
    assert tables["base"]["avg_delta"] == pytest.approx(0.4)
    assert tables["compressed"]["avg_delta"] == pytest.approx(0.3)
    assert "| base | 90.0 | 30.0 | 60.0 | 40.0 | 75.0 | 35.0 | 40.0 |" in module.markdown(tables, ["rahp"])
    write(tmp_path / "syn" / "report.json", json.dumps({"task": {"name": "synthetic"}, "sets": {"dev": {}}}))
    with pytest.raises(DataError, match="no AdvGLUE set"):
        module.read_card(tmp_path / "syn")
