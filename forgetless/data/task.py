"""Tasks: train / dev sets, named challenge sets, label names and label mappings.

A challenge set may use other labels than the task (MNLI's 3 classes → HANS's 2): its
``prediction_map`` sends each task label id to one of its own label ids, so 3-way predictions
are scored on the 2-way set (neutral and contradiction both count as non-entailment).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError


@dataclass
class ExampleSet:
    """Labelled text (pairs): ``text_b`` is None for single-sentence tasks.

    ``labels`` index ``label_names``; ``hard`` holds optional ground-truth difficulty flags
    (True = hard); ``groups`` optional per-example group names for breakdowns (e.g. HANS
    heuristic); ``prediction_map`` maps task label ids to this set's label ids.
    """

    name: str
    text_a: list[str]
    labels: list[int]
    label_names: list[str]
    text_b: list[str] | None = None
    hard: list[bool] | None = None
    groups: list[str] | None = None
    prediction_map: dict[int, int] | None = None
    source: str = ""

    def __post_init__(self) -> None:
        where = f"{self.name} ({self.source})" if self.source else self.name
        if len(self.text_a) == 0:
            raise DataError(f"set {where} is empty")
        n = len(self.text_a)
        for attr in ("labels", "text_b", "hard", "groups"):
            value = getattr(self, attr)
            if value is not None and len(value) != n:
                raise DataError(f"set {where}: {attr} has {len(value)} entries for {n} texts")
        bad = [y for y in self.labels if not 0 <= int(y) < len(self.label_names)]
        if bad:
            raise DataError(f"set {where}: label id {bad[0]} outside 0..{len(self.label_names) - 1}")

    def __len__(self) -> int:
        return len(self.text_a)

    def subset(self, index, name: str | None = None) -> "ExampleSet":
        index = list(int(i) for i in index)
        pick = lambda values: None if values is None else [values[i] for i in index]  # noqa: E731
        return ExampleSet(name or self.name, pick(self.text_a), pick(self.labels), self.label_names,
                          pick(self.text_b), pick(self.hard), pick(self.groups), self.prediction_map, self.source)

    def map_predictions(self, predictions: np.ndarray) -> np.ndarray:
        """Task label ids → this set's label ids."""
        if self.prediction_map is None:
            return np.asarray(predictions)
        lookup = np.array([self.prediction_map[i] for i in range(len(self.prediction_map))])
        return lookup[np.asarray(predictions)]

    def fingerprint(self) -> str:
        """Content hash, used to key caches (teacher outputs, difficulty)."""
        digest = hashlib.sha256()
        for i in range(len(self)):
            digest.update(f"{self.text_a[i]}\t{self.text_b[i] if self.text_b else ''}\t{self.labels[i]}\n".encode())
        return digest.hexdigest()[:16]


@dataclass
class Task:
    """A classification task with its in-distribution sets and challenge sets.

    ``pooled_challenges`` lists the challenge sets pooled (size-weighted) into the challenge
    accuracy of F_bias, e.g. FEVER Sym1+Sym2; by default all of them.
    """

    name: str
    label_names: list[str]
    train: ExampleSet
    dev: ExampleSet
    challenges: dict[str, ExampleSet] = field(default_factory=dict)
    protocol: str = ""
    pooled_challenges: list[str] | None = None
    kind: str = "classification"

    def __post_init__(self) -> None:
        for s in [self.train, self.dev, *self.challenges.values()]:
            if s.prediction_map is None and s.label_names != self.label_names:
                raise DataError(f"set {s.name} has labels {s.label_names} but task {self.name} predicts "
                                f"{self.label_names}: give it a prediction_map")
            if s.prediction_map is not None:
                if sorted(s.prediction_map) != list(range(len(self.label_names))):
                    raise DataError(f"set {s.name}: prediction_map must map every task label id "
                                    f"0..{len(self.label_names) - 1}")
        unknown = set(self.pooled_challenges or []) - set(self.challenges)
        if unknown:
            raise DataError(f"task {self.name}: pooled challenge sets {sorted(unknown)} do not exist")

    @property
    def pooled(self) -> list[str]:
        return list(self.pooled_challenges) if self.pooled_challenges is not None else list(self.challenges)

    def eval_sets(self) -> dict[str, ExampleSet]:
        return {"dev": self.dev, **self.challenges}


def labels_from_names(values, label_names: list[str], where: str, aliases: dict[str, str] | None = None) -> list[int]:
    """Turn label strings or ints into ids; an unknown label is an error naming file and value."""
    index = {name: i for i, name in enumerate(label_names)}
    out = []
    for row, value in enumerate(values):
        key = str(value).strip()
        key = (aliases or {}).get(key, key)
        if key in index:
            out.append(index[key])
        elif key.lstrip("-").isdigit() and 0 <= int(key) < len(label_names):
            out.append(int(key))
        else:
            raise DataError(f"{where}: unknown label {value!r} in row {row + 1}; expected one of {label_names}")
    return out


def stratified_split(labels: list[int], fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Seeded stratified split: ``fraction`` of each class to the first part, the rest to the second."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(labels)
    first, second = [], []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        idx = idx[rng.permutation(len(idx))]
        cut = int(round(fraction * len(idx)))
        first.extend(idx[:cut].tolist())
        second.extend(idx[cut:].tolist())
    return sorted(first), sorted(second)
