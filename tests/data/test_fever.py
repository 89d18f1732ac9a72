"""FEVER → Symmetric task on small fixture files laid out like the data folder."""
import json

import pytest

from forgetless.data.tasks import load_task
from forgetless.errors import DataError


def _write(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture()
def data_dir(tmp_path):
    labels = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
    _write(tmp_path / "fever/paper_dev.jsonl",
           [{"id": i, "label": labels[i % 3], "claim": f"claim {i}", "evidence": []} for i in range(30)])
    _write(tmp_path / "fever_symmetric/symmetric_v0.1/fever_symmetric_generated.jsonl",
           [{"id": str(i), "label": labels[i % 2], "claim": f"sym1 {i}", "evidence_sentence": "e"} for i in range(6)])
    for split, n in (("dev", 4), ("test", 2)):
        _write(tmp_path / f"fever_symmetric/symmetric_v0.2/fever_symmetric_{split}.jsonl",
               [{"id": str(i), "label": labels[i % 2], "claim": f"sym2 {split} {i}", "evidence": "e",
                 "gold_label": labels[i % 2]} for i in range(n)])
    return tmp_path


def test_fever_claim_only_split_and_pooled_symmetric_sets(data_dir):
    task = load_task("fever", data_dir=str(data_dir), seed=0)
    assert task.label_names == ["SUPPORTS", "REFUTES"]
    assert len(task.train) == 16 and len(task.dev) == 4  # 20 SUPPORTS/REFUTES claims, 80/20 per class
    assert task.train.text_b is None and all(t.startswith("claim") for t in task.train.text_a)
    assert not set(task.train.text_a) & set(task.dev.text_a)
    assert {k: len(v) for k, v in task.challenges.items()} == {"sym1": 6, "sym2": 6}
    assert task.pooled == ["sym1", "sym2"] and "pooled for F_bias" in task.protocol
    again = load_task("fever", data_dir=str(data_dir), seed=0)
    assert again.dev.text_a == task.dev.text_a
    other = load_task("fever", data_dir=str(data_dir), seed=1)
    assert other.dev.text_a != task.dev.text_a


def test_fever_bad_label_names_the_file(data_dir):
    _write(data_dir / "fever/paper_dev.jsonl", [{"id": 1, "label": "MAYBE", "claim": "c"}])
    with pytest.raises(DataError, match="paper_dev.jsonl"):
        load_task("fever", data_dir=str(data_dir))
