"""FEVER → FEVER-Symmetric: the fact-verification protocol of Du et al. (2023, §3.2, Table 1:
FEVER with the Symmetric sets as adversarial test sets; F_bias pools Sym1 and Sym2).

Offline (``--data-dir``): FEVER's training set is not in the data folder, so the claim-only
protocol trains on a seeded, stratified 80% of FEVER ``paper_dev`` and keeps the other 20% as the
in-distribution dev set. Challenge sets: FEVER-Symmetric v0.1 (``sym1``, Schuster et al. 2019,
generated) and v0.2 dev + test (``sym2``), pooled (size-weighted) for F_bias as in the paper.
The input is the claim alone (``paper_dev`` holds evidence ids, not text), which is exactly the
claim-only bias the Symmetric sets were built to expose. Symmetric sets are SUPPORTS / REFUTES only,
so NOT ENOUGH INFO claims are left out of training and dev: a 2-way task.

From the hub (no data folder; ``hub.py``): the paper's protocol, FEVER v1.0 ``train`` (claims
de-duplicated: the hub has a row per evidence sentence) and the whole ``paper_dev`` as dev set; the
Symmetric sets come from the authors' release (they are not on the hub).

Paper scale with a data folder (``--dataset ID``, needs network): the training set comes from
that hub dataset (``--subset``, ``--train-split``; columns ``claim`` and ``label`` with SUPPORTS /
REFUTES names or ids), the whole filtered ``paper_dev`` is the dev set, and the Symmetric sets
stay the challenge. ``--dataset`` also replaces the training set of the hub protocol.
"""
from __future__ import annotations

from pathlib import Path

from .files import example_set_from_rows, read_table, require_columns
from . import hub
from .registry import TASKS, data_root
from .task import ExampleSet, Task, train_dev_split

FEVER_LABELS = ["SUPPORTS", "REFUTES"]
DEV_FILE = "fever/paper_dev.jsonl"
SYM1_FILE = "fever_symmetric/symmetric_v0.1/fever_symmetric_generated.jsonl"
SYM2_FILES = ("fever_symmetric/symmetric_v0.2/fever_symmetric_dev.jsonl",
              "fever_symmetric/symmetric_v0.2/fever_symmetric_test.jsonl")


def claims(name: str, rows_and_source: tuple[list[dict], str]) -> ExampleSet:
    """Claim-only examples of FEVER-style rows (``claim``, ``label``) and where they came from;
    NOT ENOUGH INFO rows dropped."""
    rows, source = rows_and_source
    require_columns(rows, ["claim", "label"], source)
    kept = [r for r in rows if str(r["label"]).strip() not in ("NOT ENOUGH INFO", "NEI")]
    return example_set_from_rows(kept, name, source, "claim", "label", FEVER_LABELS)


def read_rows(root: Path, *files: str) -> tuple[list[dict], str]:
    rows: list[dict] = []
    for rel in files:
        rows.extend(read_table(root / rel))
    return rows, ", ".join(str(root / rel) for rel in files)


@TASKS.register("fever")
def fever_task(data_dir=None, seed: int = 0, train_fraction: float = 0.8, dataset: str | None = None,
               subset: str | None = None, train_split: str | None = None) -> Task:
    root = data_root(data_dir)
    if root is None:
        dev = claims("dev", hub.load_rows("fever/dev"))
        challenges = {name: claims(name, hub.load_rows(f"fever/{name}")) for name in ("sym1", "sym2")}
        train = _hub_train(dataset, subset, train_split) if dataset else claims("train", hub.load_rows("fever/train"))
        protocol = (f"FEVER → Symmetric: train {dataset or 'FEVER v1.0 train'}, dev = FEVER paper_dev "
                    "(Hugging Face hub)")
        return _task(train, dev, challenges, protocol)
    dev = claims("fever_dev", read_rows(root, DEV_FILE))
    challenges = {"sym1": claims("sym1", read_rows(root, SYM1_FILE)),
                  "sym2": claims("sym2", read_rows(root, *SYM2_FILES))}
    if dataset:
        train = _hub_train(dataset, subset, train_split)
        protocol = f"FEVER → Symmetric: train {dataset} ({subset or 'default'}), dev = FEVER paper_dev"
        dev = dev.subset(list(range(len(dev))), "dev")
    else:
        train, dev, split = train_dev_split(dev, train_fraction, seed)
        protocol = f"FEVER → Symmetric (claim-only): {split} of FEVER paper_dev (data folder)"
    return _task(train, dev, challenges, protocol)


def _task(train: ExampleSet, dev: ExampleSet, challenges: dict, protocol: str) -> Task:
    return Task("fever", FEVER_LABELS, train, dev, challenges, pooled_challenges=["sym1", "sym2"],
                protocol=protocol + " without NOT ENOUGH INFO (2-way); challenge FEVER-Symmetric v0.1 (sym1) and "
                                    "v0.2 dev+test (sym2), pooled for F_bias")


def _hub_train(dataset: str, subset: str | None, train_split: str | None) -> ExampleSet:
    """``--dataset``: a hub FEVER training set (claim, label columns)."""
    import datasets

    rows = [dict(r) for r in datasets.load_dataset(dataset, subset, split=train_split or "train")]
    return claims("train", (rows, f"{dataset}:{train_split or 'train'}"))
