"""GLUE tasks with AdvGLUE challenge sets (Wang et al. 2021), from a data folder (the protocols
of the data README) or, with no data folder, from the hub (``hub.py``):

* ``sst2`` — SST-2 train / dev → AdvGLUE-sst2 (folder and hub alike);
* ``rte``  — RTE train / dev → AdvGLUE-rte (folder and hub alike);
* ``qnli`` — folder: seeded stratified split of QNLI dev (no train set offline); hub: GLUE QNLI
  train / validation → AdvGLUE-qnli;
* ``qqp``  — folder: seeded stratified split of a QQP train slice → AdvGLUE-qqp, PAWS-QQP and
  PAWS-Wiki; hub: GLUE QQP train / validation → AdvGLUE-qqp and PAWS-Wiki (PAWS-QQP is not on
  the hub).

The folder splits a set in two only where its train set is missing; the hub has the official
splits. AdvGLUE labels follow the GLUE label ids, so no prediction map is needed.
``advglue_table`` builds the RAHP paper's Table 1 layout (GLUE and AdvGLUE accuracy per task,
averages, Avg Δ).
"""
from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

from ..errors import DataError
from .files import example_set_from_rows, read_table, require_columns
from . import hub
from .registry import TASKS, data_root
from .task import ExampleSet, Task, labels_from_names, train_dev_split

ADVGLUE_FILE = "advglue/dev.json"
SST2_LABELS = ["negative", "positive"]
NLI_LABELS = ["entailment", "not_entailment"]
QQP_LABELS = ["not_duplicate", "duplicate"]


def read_advglue(data_dir: Path, task: str, label_names: list[str]) -> ExampleSet:
    """The AdvGLUE dev subset of ``task`` (labels are GLUE ids)."""
    path = Path(data_dir) / ADVGLUE_FILE
    if not path.is_file():
        raise DataError(f"{path}: AdvGLUE dev file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: unreadable JSON ({exc})") from exc
    if task not in data:
        raise DataError(f"{path}: no AdvGLUE subset {task!r}; present: {sorted(data)}")
    if not data[task]:
        raise DataError(f"{path}: AdvGLUE subset {task!r} is empty")
    a, b = hub.GLUE_COLUMNS[task]
    return example_set_from_rows(data[task], "advglue", f"{path} [{task}]", a, "label", label_names, b)


def _table(data_dir: Path, rel: str, quoting=csv.QUOTE_NONE) -> tuple[list[dict], str]:
    path = Path(data_dir) / rel
    return read_table(path, quoting=quoting), str(path)


def origin(root: Path | None) -> str:
    """Where a task's sets came from, for its protocol line."""
    return "data folder" if root is not None else "Hugging Face hub"


def _hub_pair(task: str, labels: list[str]) -> dict[str, ExampleSet]:
    return {split: hub.example_set(f"{task}/{split}", split, labels) for split in ("train", "dev")}


def _glue_task(name: str, labels: list[str], data_dir, folder: str, quoting=csv.QUOTE_NONE, strip: bool = False,
               dev: str = "dev") -> Task:
    """GLUE ``name`` train / ``dev`` (data folder ``glue/<folder>/`` or the hub; columns
    ``hub.GLUE_COLUMNS``) with its AdvGLUE subset."""
    root = data_root(data_dir)
    if root is None:
        sets = _hub_pair(name, labels)
        challenge = hub.example_set(f"advglue/{name}", "advglue", labels)
    else:
        sets, (a, b) = {}, hub.GLUE_COLUMNS[name]
        for split in ("train", "dev"):
            rows, where = _table(root, f"glue/{folder}/{split}.tsv", quoting)
            sets[split] = example_set_from_rows(rows, split, where, a, "label", labels, b, strip=strip)
        challenge = read_advglue(root, name, labels)
    return Task(name, labels, sets["train"], sets["dev"], {"advglue": challenge}, pooled_challenges=["advglue"],
                protocol=f"{name} → AdvGLUE-{name}: GLUE {folder} train / {dev}, AdvGLUE dev {name} subset as "
                         f"challenge ({origin(root)})")


def sst2_task(data_dir=None, seed: int = 0) -> Task:
    return _glue_task("sst2", SST2_LABELS, data_dir, "SST-2", strip=True)


def rte_task(data_dir=None, seed: int = 0) -> Task:
    return _glue_task("rte", NLI_LABELS, data_dir, "RTE", quoting=csv.QUOTE_MINIMAL)


def qnli_task(data_dir=None, seed: int = 0, train_fraction: float = 0.8) -> Task:
    data_dir = data_root(data_dir)
    if data_dir is None:  # the hub has QNLI train: no split of dev (train_fraction does not apply)
        return _glue_task("qnli", NLI_LABELS, None, "QNLI", dev="validation")
    rows, where = _table(data_dir, "glue/QNLI/dev.tsv")
    full = example_set_from_rows(rows, "qnli_dev", where, "question", "label", NLI_LABELS, "sentence")
    train, dev, split = train_dev_split(full, train_fraction, seed)
    return Task("qnli", NLI_LABELS, train, dev, {"advglue": read_advglue(data_dir, "qnli", NLI_LABELS)},
                pooled_challenges=["advglue"], protocol=(f"qnli → AdvGLUE-qnli: {split} of GLUE QNLI dev ({len(full)} "
                                                         f"rows; no train set offline; {origin(data_dir)})"))


QQP_FILE = "glue/QQP/qqp_train_heldout_23k_mieseung.tsv"


def read_qqp_slice(data_dir: Path) -> tuple[ExampleSet, int]:
    """The headerless QQP slice (id, qid1, qid2, question1, question2, is_duplicate); malformed rows
    (wrong field count or label) are skipped and counted."""
    path = Path(data_dir) / QQP_FILE
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    a, b, labels, skipped = [], [], [], 0
    with path.open(encoding="utf-8", newline="") as handle:
        for fields in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            if len(fields) != 6 or fields[5].strip() not in ("0", "1"):
                skipped += 1
                continue
            a.append(fields[3])
            b.append(fields[4])
            labels.append(int(fields[5]))
    if not a:
        raise DataError(f"{path}: no well-formed rows (expected 6 tab-separated fields)")
    return ExampleSet("qqp_slice", a, labels, QQP_LABELS, text_b=b, source=str(path)), skipped


def _unwrap_bytes(text: str) -> str:
    """PAWS-QQP stores text as Python bytes literals (``b'...'``): decode them safely."""
    text = text.strip()
    if len(text) >= 3 and text[0] == "b" and text[1] in "'\"" and text[-1] == text[1]:
        try:
            value = ast.literal_eval(text)
            return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
        except (ValueError, SyntaxError):
            return text[2:-1]
    return text


def read_paws(data_dir: Path, rel: str, name: str) -> ExampleSet:
    rows, where = _table(data_dir, rel)
    require_columns(rows, ["sentence1", "sentence2", "label"], where)
    return ExampleSet(name, [_unwrap_bytes(r["sentence1"]) for r in rows],
                      labels_from_names([r["label"] for r in rows], QQP_LABELS, where), QQP_LABELS,
                      text_b=[_unwrap_bytes(r["sentence2"]) for r in rows], source=where)


def qqp_task(data_dir=None, seed: int = 0, train_fraction: float = 0.8) -> Task:
    data_dir = data_root(data_dir)
    if data_dir is None:  # GLUE QQP train / validation; PAWS-QQP is not on the hub
        sets = _hub_pair("qqp", QQP_LABELS)
        challenges = {"advglue": hub.example_set("advglue/qqp", "advglue", QQP_LABELS),
                      "paws_wiki": hub.example_set("paws_wiki", "paws_wiki", QQP_LABELS)}
        return Task("qqp", QQP_LABELS, sets["train"], sets["dev"], challenges, pooled_challenges=["advglue"],
                    protocol="qqp → AdvGLUE-qqp, PAWS-Wiki: GLUE QQP train / validation (Hugging Face hub; PAWS-QQP "
                             "is not on the hub, pass --data-dir for it)")
    full, skipped = read_qqp_slice(data_dir)
    train, dev, split = train_dev_split(full, train_fraction, seed)
    challenges = {"advglue": read_advglue(data_dir, "qqp", QQP_LABELS),
                  "paws_qqp": read_paws(data_dir, "paws/paws_qqp/dev_and_test.tsv", "paws_qqp"),
                  "paws_wiki": read_paws(data_dir, "paws/paws_wiki_labeled_final/dev.tsv", "paws_wiki")}
    return Task("qqp", QQP_LABELS, train, dev, challenges, pooled_challenges=["advglue"],
                protocol=(f"qqp-slice → AdvGLUE-qqp, PAWS-QQP, PAWS-Wiki: {split} of a {len(full)}-row QQP train "
                          f"slice ({skipped} malformed row(s) skipped; {origin(data_dir)})"))


GLUE_TASKS = {"sst2": sst2_task, "rte": rte_task, "qnli": qnli_task, "qqp": qqp_task}


def advglue_table(accuracy: dict[str, dict[str, float]]) -> dict:
    """RAHP Table 1 layout from ``{task: {"glue": acc, "advglue": acc}}``: per-task rows, the two
    averages and ``Avg Δ = mean(GLUE) − mean(AdvGLUE)``."""
    if not accuracy:
        raise DataError("advglue_table needs at least one task")
    for task, acc in accuracy.items():
        if "glue" not in acc or "advglue" not in acc:
            raise DataError(f"advglue_table: task {task!r} needs 'glue' and 'advglue' accuracies")
    glue = sum(a["glue"] for a in accuracy.values()) / len(accuracy)
    adv = sum(a["advglue"] for a in accuracy.values()) / len(accuracy)
    return {"tasks": {t: dict(a) for t, a in accuracy.items()}, "avg_glue": glue, "avg_advglue": adv,
            "avg_delta": glue - adv}


def _register() -> None:
    for name, builder in GLUE_TASKS.items():
        TASKS.register(name)(builder)


_register()
