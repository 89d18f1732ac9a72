"""Tasks: train / dev sets, named challenge sets, label names and label mappings, and the task's
*kind* (``classification``: labelled text in an ``ExampleSet``; ``generation``: source → reference
texts in a ``PairSet``). The kind decides how models are loaded, fed, run and scored
(``forgetless.kinds``); everything else (methods, objectives, trainer, report) is shared.

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
class PairSet:
    """Source texts with one or more reference texts each (generation); the first reference is
    the training target."""

    name: str
    sources: list[str]
    references: list[list[str]]
    source: str = ""

    def __post_init__(self) -> None:
        where = f"{self.name} ({self.source})" if self.source else self.name
        if not self.sources:
            raise DataError(f"set {where} is empty")
        if len(self.sources) != len(self.references):
            raise DataError(f"set {where}: {len(self.sources)} sources, {len(self.references)} references")
        if any(not refs for refs in self.references):
            raise DataError(f"set {where}: every source needs at least one reference")

    @property
    def targets(self) -> list[str]:
        return [refs[0] for refs in self.references]

    def __len__(self) -> int:
        return len(self.sources)

    def subset(self, index, name: str | None = None) -> "PairSet":
        index = [int(i) for i in index]
        return PairSet(name or self.name, [self.sources[i] for i in index], [self.references[i] for i in index],
                       self.source)

    def fingerprint(self) -> str:
        """Content hash, used to key caches and checkpoints."""
        digest = hashlib.sha256()
        for src, refs in zip(self.sources, self.references):
            digest.update(f"{src}\t{chr(31).join(refs)}\n".encode())
        return digest.hexdigest()[:16]


KINDS = ("classification", "generation")


@dataclass
class Task:
    """A task with its in-distribution sets and challenge (or extra evaluation) sets.

    ``kind`` is ``classification`` (``ExampleSet``s, ``label_names``) or ``generation``
    (``PairSet``s; ``metric`` names the headline score). ``pooled_challenges`` lists the challenge
    sets pooled (size-weighted) into the challenge accuracy of F_bias, e.g. FEVER Sym1+Sym2; by
    default all of them. ``tokenizer`` is set by tasks with their own vocabulary (the built-in
    seq2seq look-up task); models built for such a task use it.
    """

    name: str
    label_names: list[str] | None
    train: ExampleSet | PairSet
    dev: ExampleSet | PairSet
    challenges: dict[str, ExampleSet | PairSet] = field(default_factory=dict)
    protocol: str = ""
    pooled_challenges: list[str] | None = None
    kind: str = "classification"
    metric: str = "accuracy"
    tokenizer: object = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise DataError(f"task {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        want = ExampleSet if self.kind == "classification" else PairSet
        for s in [self.train, self.dev, *self.challenges.values()]:
            if not isinstance(s, want):
                raise DataError(f"task {self.name} ({self.kind}): set {s.name} is a {type(s).__name__}, "
                                f"expected {want.__name__}")
        if self.kind == "generation":
            return
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

    def eval_sets(self) -> dict[str, ExampleSet | PairSet]:
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
