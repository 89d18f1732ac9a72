"""Per-example predictions round-trip through JSONL and every accuracy is recomputable from them."""
import pytest

from forgetless.errors import DataError
from forgetless.report.predictions import read_predictions, recompute_accuracy, write_predictions


def rows():
    out = []
    golds = ["entailment", "non-entailment", "entailment", "entailment"]
    base_pred = ["entailment", "non-entailment", "non-entailment", "entailment"]  # 3/4
    comp_pred = ["entailment", "entailment", "non-entailment", "non-entailment"]  # 1/4
    for role, preds in (("base", base_pred), ("compressed", comp_pred)):
        for i, (gold, pred) in enumerate(zip(golds, preds)):
            out.append({"id": i, "set": "dev", "role": role, "gold": gold, "predicted": pred,
                        "probabilities": [0.7, 0.3] if pred == "entailment" else [0.2, 0.8],
                        "group": "lexical_overlap" if i < 2 else "subsequence", "hard": i % 2 == 1})
    out.append({"id": "c0", "set": "challenge", "role": "base", "gold": 1, "predicted": 1})
    return out


def test_round_trip_and_recompute(tmp_path):
    path = write_predictions(tmp_path / "predictions.jsonl", rows())
    loaded = read_predictions(path)
    assert len(loaded) == 9
    assert loaded[0] == {"id": 0, "set": "dev", "role": "base", "gold": "entailment", "predicted": "entailment",
                         "probabilities": [0.7, 0.3], "group": "lexical_overlap", "hard": False}
    assert loaded[-1]["probabilities"] is None and loaded[-1]["hard"] is None
    assert recompute_accuracy(loaded, "dev", "base") == {"accuracy": 0.75, "n": 4}
    assert recompute_accuracy(loaded, "dev", "compressed") == {"accuracy": 0.25, "n": 4}
    assert recompute_accuracy(loaded, "dev", "base", hard=True) == {"accuracy": 1.0, "n": 2}  # ids 1, 3
    assert recompute_accuracy(loaded, "dev", "compressed", group="subsequence") == {"accuracy": 0.0, "n": 2}
    assert recompute_accuracy(loaded, "challenge", "compressed") == {"accuracy": None, "n": 0}
    assert [p.name for p in tmp_path.iterdir()] == ["predictions.jsonl"]  # no temporary left


def test_bad_rows_are_named(tmp_path):
    with pytest.raises(DataError, match="row 1: prediction row lacks gold"):
        write_predictions(tmp_path / "p.jsonl", [{"id": 0, "set": "dev", "role": "base", "predicted": 1}])
    with pytest.raises(DataError, match="role 'teacher'"):
        write_predictions(tmp_path / "p.jsonl", [{"id": 0, "set": "dev", "role": "teacher", "gold": 1, "predicted": 1}])
    with pytest.raises(DataError, match="duplicate id 0"):
        write_predictions(tmp_path / "p.jsonl", [rows()[0], rows()[0]])
    (tmp_path / "bad.jsonl").write_text('{"id": 0}\nnot json\n')
    with pytest.raises(DataError, match="line 1: prediction row lacks"):
        read_predictions(tmp_path / "bad.jsonl")
    assert not (tmp_path / "p.jsonl").exists()
