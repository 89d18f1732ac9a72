"""Named benchmarks from the hub (``forgetless.data.hub``) give the same ``Task`` as the data folder
on the same rows. The hub cannot be reached from tests: each test writes a small data folder and
the same rows in the hub's own layout (a dataset repo with a README ``configs:`` table and parquet
files, the parquet export ``<config>/<split>/0000.parquet`` of script-era repos, the authors' JSONL
release of FEVER-Symmetric), and points ``datasets.load_dataset`` at that copy: the hub path runs
the real ``load_dataset`` on the hub layout and the real row → ``ExampleSet`` code."""
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

datasets = pytest.importorskip("datasets")

from forgetless.data import hub  # noqa: E402
from forgetless.data.tasks import load_task  # noqa: E402
from forgetless.errors import DataError  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SET_FIELDS = ("name", "text_a", "labels", "label_names", "text_b", "hard", "groups", "prediction_map")


def _tsv(path: Path, header, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\", lineterminator="\n")
        if header:
            writer.writerow(header)
        writer.writerows(rows)


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _folder(root: Path) -> Path:
    """A data folder in the layout of the data README, a few rows per file."""
    sst = [(f"a fine film number {i} ", i % 2) for i in range(8)]
    _tsv(root / "glue/SST-2/train.tsv", ["sentence", "label"], sst)
    _tsv(root / "glue/SST-2/dev.tsv", ["sentence", "label"], [(f"dull scene {i}", 1 - i % 2) for i in range(4)])
    advglue = {"sst2": [{"idx": i, "label": i % 2, "sentence": f"a tricky review {i}"} for i in range(3)],
               "qqp": [{"idx": i, "label": i % 2, "question1": f"how do I {i}?", "question2": f"how to {i}?"}
                       for i in range(3)]}
    (root / "advglue").mkdir(parents=True)
    (root / "advglue/dev.json").write_text(json.dumps(advglue), encoding="utf-8")
    gold = ["entailment", "neutral", "contradiction"]
    _tsv(root / "mnli/dev_matched_mccoy_berts_of_a_feather.tsv", ["index", "premise", "hypothesis", "gold_label"],
         [(i, f"the cat {i} sat", f"a cat {i} rested", gold[i % 3]) for i in range(15)])
    hardness = root / "mnli_hard/mnli_validation_matched_hardness.csv"
    hardness.parent.mkdir(parents=True)
    hardness.write_text("idx,pairID,hardness\n" + "".join(f"{i},{i}e,{i % 2}\n" for i in range(15)))
    heuristics = ["lexical_overlap", "subsequence", "constituent", "lexical_overlap"]
    _tsv(root / "hans/hans_evaluation_set_30k.tsv", ["gold_label", "sentence1", "sentence2", "heuristic"],
         [(["entailment", "non-entailment"][i % 2], f"the doctor {i} saw the judge", f"the judge {i} saw",
           heuristics[i]) for i in range(4)])
    _tsv(root / "glue/QQP/qqp_train_heldout_23k_mieseung.tsv", None,
         [("id", "qid1", "qid2", "question1", "question2")]  # malformed first line, as in the real file
         + [(i, 2 * i, 2 * i + 1, f"what is {i}?", f"what's {i}?", i % 2) for i in range(12)])
    _tsv(root / "paws/paws_qqp/dev_and_test.tsv", ["id", "sentence1", "sentence2", "label"],
         [(i, f"b'q {i} here'", f"b'here q {i}'", i % 2) for i in range(3)])
    paws_wiki = [(i, f"wiki sentence {i}", f"sentence wiki {i}", i % 2) for i in range(4)]
    _tsv(root / "paws/paws_wiki_labeled_final/dev.tsv", ["id", "sentence1", "sentence2", "label"], paws_wiki)
    labels = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
    _jsonl(root / "fever/paper_dev.jsonl", [{"id": 100 + i, "label": labels[i % 3], "claim": f"claim number {i}."}
                                            for i in range(15)])
    sym = root / "fever_symmetric"
    _jsonl(sym / "symmetric_v0.1/fever_symmetric_generated.jsonl",
           [{"id": f"s1{i}", "label": labels[i % 2], "claim": f"sym claim {i}", "evidence_sentence": "e"}
            for i in range(3)])
    for part, n in (("dev", 2), ("test", 3)):
        _jsonl(sym / f"symmetric_v0.2/fever_symmetric_{part}.jsonl",
               [{"id": f"s2{part}{i}", "label": labels[i % 2], "claim": f"sym2 {part} claim {i}",
                 "evidence_sentence": "e", "sentence1": "x", "sentence2": "y"} for i in range(n)])
    return root


def _repo(root: Path, repo: str, configs: dict[str, dict[str, list[dict]]]) -> None:
    """A hub dataset repo: ``<config>/<split>-00000-of-00001.parquet`` and the README table."""
    card = ["---", "configs:"]
    for config, splits in configs.items():
        card += [f"- config_name: {config}", "  data_files:"]
        for split, rows in splits.items():
            path = root / repo / config / f"{split}-00000-of-00001.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            datasets.Dataset.from_list(rows).to_parquet(str(path))
            card += [f"  - split: {split}", f"    path: {config}/{split}-*"]
    (root / repo / "README.md").write_text("\n".join(card + ["---", ""]), encoding="utf-8")


def _export(root: Path, repo: str, config: str, split: str, rows: list[dict]) -> None:
    """The hub's parquet export of a repo with a loading script: ``<config>/<split>/0000.parquet``."""
    path = root / repo / "refs-convert-parquet" / config / split / "0000.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows).to_parquet(str(path))


def _pair_rows(examples, a: str, b: str | None, strip_pad: str = "") -> list[dict]:
    return [{a: t + strip_pad, **({b: examples.text_b[i]} if b else {}), "label": examples.labels[i], "idx": i}
            for i, t in enumerate(examples.text_a)]


@pytest.fixture()
def pointed_hub(tmp_path, monkeypatch):
    """(data folder, hub copy root, calls): ``datasets.load_dataset`` reads the hub copy."""
    folder = _folder(tmp_path / "data")
    root = tmp_path / "hub"
    real = datasets.load_dataset
    calls = []

    def load_dataset(path, name=None, split=None, data_files=None, **kwargs):
        calls.append((path, name, split, data_files))
        cache = str(tmp_path / "cache")
        if path == "parquet":  # hf://datasets/<repo>@refs%2Fconvert%2Fparquet/<config>/<split>/*.parquet
            local = data_files.replace("hf://datasets/", f"{root}/").replace(f"@{hub.EXPORT}", "/refs-convert-parquet")
            return real("parquet", data_files=local, split=split, cache_dir=cache)
        if path == "json":  # the authors' release on GitHub
            local = [str(root / "github" / url.split("/master/")[1]) for url in data_files]
            return real("json", data_files=local, split=split, cache_dir=cache)
        return real(str(root / path), name, split=split, cache_dir=cache)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # no reachability probe; nothing leaves the machine
    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)
    return folder, root, calls


def _same(hub_task, folder_task, skip_sets=(), skip_fields=()) -> None:
    assert hub_task.name == folder_task.name and hub_task.label_names == folder_task.label_names
    assert hub_task.pooled == [p for p in folder_task.pooled if p not in skip_sets]
    folder_sets = {k: v for k, v in folder_task.eval_sets().items() if k not in skip_sets}
    assert sorted(hub_task.eval_sets()) == sorted(folder_sets)
    for key, hub_set in [("train", hub_task.train), *hub_task.eval_sets().items()]:
        mine = folder_task.train if key == "train" else folder_sets[key]
        for field in SET_FIELDS:
            if field not in skip_fields:
                assert getattr(hub_set, field) == getattr(mine, field), (key, field)
        assert hub_set.fingerprint() == mine.fingerprint(), key


def test_sst2_from_the_hub_equals_the_folder(pointed_hub):
    folder, root, calls = pointed_hub
    local = load_task("sst2", data_dir=str(folder))
    _repo(root, "nyu-mll/glue", {"sst2": {"train": _pair_rows(local.train, "sentence", None, " "),
                                          "validation": _pair_rows(local.dev, "sentence", None, " ")}})
    _repo(root, "AI-Secure/adv_glue", {"adv_sst2": {"validation": _pair_rows(local.challenges["advglue"],
                                                                             "sentence", None)}})
    from_hub = load_task("sst2")
    _same(from_hub, local)
    assert [c[:3] for c in calls] == [("nyu-mll/glue", "sst2", "train"), ("nyu-mll/glue", "sst2", "validation"),
                                      ("AI-Secure/adv_glue", "adv_sst2", "validation")]
    assert from_hub.protocol.endswith("(Hugging Face hub)") and local.protocol.endswith("(data folder)")


def test_mnli_and_hans_from_the_hub_equal_the_folder_without_hardness(pointed_hub):
    folder, root, calls = pointed_hub
    local = load_task("mnli-small", data_dir=str(folder), seed=3)
    rows = [{"premise": p, "hypothesis": h, "label": ["entailment", "neutral", "contradiction"].index(g), "idx": i}
            for i, (_, p, h, g) in enumerate(csv.reader(
                (folder / "mnli/dev_matched_mccoy_berts_of_a_feather.tsv").open(), delimiter="\t")) if i > 0]
    rows = [dict(r, idx=i) for i, r in enumerate(rows)]
    _repo(root, "nyu-mll/glue", {"mnli": {"train": rows, "validation_matched": rows}})
    hans = local.challenges["hans"]
    _export(root, "jhu-cogsci/hans", "plain_text", "validation",
            [{"premise": a, "hypothesis": b, "label": y, "heuristic": g, "subcase": "x", "template": "t"}
             for a, b, y, g in zip(hans.text_a, hans.text_b, hans.labels, hans.groups)])
    from_hub = load_task("mnli-small", seed=3)
    _same(from_hub, local, skip_fields=("hard",))
    assert local.dev.hard is not None and from_hub.dev.hard is None and from_hub.train.hard is None
    assert from_hub.challenges["hans"].prediction_map == {0: 0, 1: 1, 2: 1}
    assert "no hard/easy split" in from_hub.protocol
    full = load_task("mnli")  # GLUE MNLI train / validation_matched → HANS, the hub only
    assert len(full.train) == len(full.dev) == 15 and full.challenges["hans"].groups == hans.groups
    with pytest.raises(DataError, match="task mnli needs GLUE MNLI train.*task=mnli-small"):
        load_task("mnli", data_dir=str(folder))


def test_qqp_and_paws_from_the_hub_equal_the_folder_without_paws_qqp(pointed_hub):
    folder, root, _ = pointed_hub
    local = load_task("qqp", data_dir=str(folder), seed=1)
    _repo(root, "nyu-mll/glue", {"qqp": {"train": _pair_rows(local.train, "question1", "question2"),
                                         "validation": _pair_rows(local.dev, "question1", "question2")}})
    _repo(root, "AI-Secure/adv_glue", {"adv_qqp": {"validation": _pair_rows(local.challenges["advglue"],
                                                                            "question1", "question2")}})
    _repo(root, "google-research-datasets/paws",
          {"labeled_final": {"validation": _pair_rows(local.challenges["paws_wiki"], "sentence1", "sentence2")}})
    from_hub = load_task("qqp", seed=1)
    _same(from_hub, local, skip_sets=("paws_qqp",))
    assert "paws_qqp" in local.challenges and "paws_qqp" not in from_hub.challenges
    assert "PAWS-QQP is not on the hub" in from_hub.protocol


def test_fever_and_symmetric_from_the_hub_equal_the_folder(pointed_hub):
    """The hub's FEVER has one row per evidence sentence (claims repeat) and NOT ENOUGH INFO rows."""
    folder, root, calls = pointed_hub
    local = load_task("fever", data_dir=str(folder), seed=2)
    names = local.label_names

    def fever_rows(examples, start):
        rows = []
        for i, (claim, y) in enumerate(zip(examples.text_a, examples.labels)):
            row = {"id": start + i, "label": names[y], "claim": claim, "evidence_annotation_id": i,
                   "evidence_id": i, "evidence_wiki_url": "Page", "evidence_sentence_id": 0}
            rows += [row, dict(row, evidence_sentence_id=1)]  # a second evidence row of the same claim
        return rows + [{"id": start + 999, "label": "NOT ENOUGH INFO", "claim": "unknowable.",
                        "evidence_annotation_id": 0, "evidence_id": -1, "evidence_wiki_url": "", "evidence_sentence_id": -1}]

    _export(root, "fever/fever", "v1.0", "train", fever_rows(local.train, 0))
    _export(root, "fever/fever", "v1.0", "paper_dev", fever_rows(local.dev, 5000))
    for rel in ("symmetric_v0.1/fever_symmetric_generated.jsonl", "symmetric_v0.2/fever_symmetric_dev.jsonl",
                "symmetric_v0.2/fever_symmetric_test.jsonl"):
        target = root / "github" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((folder / "fever_symmetric" / rel).read_bytes())
    from_hub = load_task("fever")
    _same(from_hub, local)
    assert len(from_hub.challenges["sym2"]) == 5 and from_hub.pooled == ["sym1", "sym2"]
    assert calls[0][0] == "parquet" and "fever/fever@refs%2Fconvert%2Fparquet/v1.0/paper_dev/" in calls[0][3]
    assert any(c[0] == "json" and c[3][0].startswith(hub.SYMMETRIC) for c in calls)


def test_unreachable_hub_is_one_error_naming_the_dataset_and_data_dir(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("FORGETLESS_DATA_DIR", raising=False)
    monkeypatch.setattr(hub, "_reachable", lambda host, timeout=3.0: False)
    with pytest.raises(DataError) as info:
        load_task("rte")
    message = str(info.value)
    assert "nyu-mll/glue (rte, train)" in message and "huggingface.co cannot be reached" in message
    assert "data_dir=" in message and "\n" not in message


def test_cli_without_data_folder_offline_stops_in_seconds(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FORGETLESS_DATA_DIR"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_CACHE=str(tmp_path / "empty-cache"), PYTHONPATH=str(ROOT))
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "forgetless.cli", "compress", "--task", "sst2", "--out",
                           str(tmp_path / "out")], env=env, capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - start
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "nyu-mll/glue (sst2, train)" in lines[0] and "--data-dir" in lines[0]
    assert not (tmp_path / "out").exists() and elapsed < 60
