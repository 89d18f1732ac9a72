"""MNLI → HANS (McCoy et al. 2019), the RMC paper's main setting (Du et al. 2023, §3.2).

* ``mnli-small``: the offline protocol of the data README. Train on a seeded, stratified 80% of
  MNLI dev matched, keep the other 20% as the in-distribution dev set. From the data folder,
  Gururangan et al. (2018) hardness gives ground-truth easy/hard flags for every MNLI row (hard =
  a hypothesis-only model gets it wrong); from the hub (GLUE MNLI validation_matched, the same rows
  in the same order) there are no hardness flags, so no hard / easy split.
* ``mnli``: GLUE MNLI train / validation_matched, the paper's protocol; the hub only (the data
  folder has no MNLI train set).

HANS is the challenge set of both, where the 3-way predictions collapse to entailment vs
non-entailment.
"""
from __future__ import annotations

import csv

from ..errors import DataError
from .files import example_set_from_rows, read_table, require_columns
from . import hub
from .registry import TASKS, data_root
from .task import ExampleSet, Task, train_dev_split

MNLI_LABELS = ["entailment", "neutral", "contradiction"]
HANS_LABELS = ["entailment", "non-entailment"]
MNLI_TO_HANS = {0: 0, 1: 1, 2: 1}  # neutral and contradiction both count as non-entailment

MNLI_FILE = "mnli/dev_matched_mccoy_berts_of_a_feather.tsv"
HARDNESS_FILE = "mnli_hard/mnli_validation_matched_hardness.csv"
HANS_FILE = "hans/hans_evaluation_set_30k.tsv"


def read_mnli_dev(data_dir) -> ExampleSet:
    path = data_dir / MNLI_FILE
    rows = read_table(path, quoting=csv.QUOTE_NONE)
    hardness_path = data_dir / HARDNESS_FILE
    hardness = read_table(hardness_path)
    require_columns(hardness, ["idx", "hardness"], str(hardness_path))
    if len(hardness) != len(rows):
        raise DataError(f"{hardness_path}: {len(hardness)} rows but {path} has {len(rows)}; they must align")
    rows = [{**row, "hard": flags["hardness"].strip() == "1"} for row, flags in zip(rows, hardness)]
    return example_set_from_rows(rows, "mnli_dev_matched", str(path), "premise", "gold_label", MNLI_LABELS,
                                 "hypothesis", hard="hard")


def read_hans(data_dir) -> ExampleSet:
    path = data_dir / HANS_FILE
    return example_set_from_rows(read_table(path, quoting=csv.QUOTE_NONE), "hans", str(path), "sentence1",
                                 "gold_label", HANS_LABELS, "sentence2", group="heuristic", prediction_map=MNLI_TO_HANS)


def hub_hans() -> ExampleSet:
    return hub.example_set("hans", "hans", HANS_LABELS, prediction_map=MNLI_TO_HANS)


def mnli_small_task(data_dir, seed: int = 0, train_fraction: float = 0.8) -> Task:
    root = data_root(data_dir)
    if root is None:
        mnli, hans = hub.example_set("mnli/dev", "mnli_dev_matched", MNLI_LABELS), hub_hans()
        hardness = "no hard/easy split (the hardness flags are not on the hub); Hugging Face hub"
    else:
        mnli, hans = read_mnli_dev(root), read_hans(root)
        hardness = "hard/easy = Gururangan et al. 2018 hardness; data folder"
    train, dev, split = train_dev_split(mnli, train_fraction, seed)
    return Task("mnli-small", MNLI_LABELS, train, dev, {"hans": hans},
                protocol=(f"mnli-small → HANS: {split} of MNLI dev matched ({len(mnli)} rows); HANS 30k challenge "
                          f"(3-way → entailment / non-entailment); {hardness}"))


def mnli_task(data_dir=None, seed: int = 0) -> Task:
    """GLUE MNLI train / validation_matched → HANS (the hub: the data folder has no MNLI train)."""
    if data_root(data_dir) is not None:
        raise DataError("task mnli needs GLUE MNLI train, which the data folder lacks: use --task mnli-small "
                        "(80/20 of MNLI dev matched) or drop --data-dir / FORGETLESS_DATA_DIR to read the hub")
    train = hub.example_set("mnli/train", "train", MNLI_LABELS)
    dev = hub.example_set("mnli/dev", "dev", MNLI_LABELS)
    return Task("mnli", MNLI_LABELS, train, dev, {"hans": hub_hans()},
                protocol="mnli → HANS: GLUE MNLI train / validation_matched; HANS 30k challenge (3-way → "
                         "entailment / non-entailment); no hard/easy split (the hardness flags are not on the hub); "
                         "Hugging Face hub")


def _register():
    TASKS.register("mnli-small")(mnli_small_task)
    TASKS.register("mnli")(mnli_task)


_register()
