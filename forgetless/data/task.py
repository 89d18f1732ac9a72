"""Tasks: train / dev sets, named challenge sets, label names and label mappings, and the task's
*kind* (``classification``: labelled text in an ``ExampleSet``; ``generation``: source → reference
texts in a ``PairSet``; ``lm-eval``: an LLM evaluation suite run through lm-evaluation-harness,
``llm/suite.py``, whose training split is calibration text). The kind decides how models are
loaded, fed, run and scored (``forgetless.kinds``); everything else (methods, objectives, trainer,
report) is shared.

A challenge set may use other labels than the task (MNLI's 3 classes → HANS's 2): its
``prediction_map`` sends each task label id to one of its own label ids, so 3-way predictions
are scored on the 2-way set (neutral and contradiction both count as non-entailment).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError, DataError
from . import hf_datasets as hf
from .task_kinds import TASK_KINDS


def check_table_names(where: str, **names) -> None:
    """Names the report shows in its tables (a set's name, its labels and groups) are one line
    without ``|``: either would break the table around them."""
    for what, values in names.items():
        for value in values:
            if any(c in str(value) for c in "|\r\n"):
                raise DataError(f"{where}: the {what} {str(value)!r} holds a line break or '|', which would break "
                                "the report's tables; rename it")


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
    may_be_empty: bool = False  # an LLM task's calibration texts when none are given (its methods read none)

    def __post_init__(self) -> None:
        where = f"{self.name} ({self.source})" if self.source else self.name
        if len(self.text_a) == 0 and not self.may_be_empty:
            raise DataError(f"set {where} is empty")
        n = len(self.text_a)
        for attr in ("labels", "text_b", "hard", "groups"):
            value = getattr(self, attr)
            if value is not None and len(value) != n:
                raise DataError(f"set {where}: {attr} has {len(value)} entries for {n} texts")
        bad = [y for y in self.labels if not 0 <= int(y) < len(self.label_names)]
        if bad:
            raise DataError(f"set {where}: label id {bad[0]} outside 0..{len(self.label_names) - 1}")
        check_table_names(f"set {where}", name=[self.name], label=self.label_names, group=set(self.groups or ()))

    def __len__(self) -> int:
        return len(self.text_a)

    def subset(self, index, name: str | None = None) -> "ExampleSet":
        index = list(int(i) for i in index)
        pick = lambda values: None if values is None else [values[i] for i in index]  # noqa: E731
        return ExampleSet(name or self.name, pick(self.text_a), pick(self.labels), self.label_names,
                          pick(self.text_b), pick(self.hard), pick(self.groups), self.prediction_map, self.source,
                          self.may_be_empty)

    def map_predictions(self, predictions) -> np.ndarray:
        """Task label ids → this set's label ids; -1 (a generated text that names no label) stays -1."""
        predictions = np.asarray(predictions, dtype=int)
        if self.prediction_map is None:
            return predictions
        lookup = np.array([self.prediction_map[i] for i in range(len(self.prediction_map))] + [-1])
        return lookup[predictions]

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
        check_table_names(f"set {where}", name=[self.name])

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


@dataclass
class Task:
    """A task with its in-distribution sets and challenge (or extra evaluation) sets.

    ``kind`` is ``classification`` (``ExampleSet``s, ``label_names``) or ``generation``
    (``PairSet``s; ``metric`` names the headline score). ``pooled_challenges`` lists the challenge
    sets pooled (size-weighted) into the challenge accuracy of F_bias, e.g. FEVER Sym1+Sym2; by
    default all of them. ``tokenizer`` is set by tasks with their own vocabulary (the built-in
    seq2seq look-up task); models built for such a task use it. An ``lm-eval`` task has no dev set:
    ``suite`` (``llm.suite.LMEvalSuite``) holds its lm-eval tasks and items, and ``train`` the
    calibration texts (one label, ``text``).
    """

    name: str
    label_names: list[str] | None
    train: ExampleSet | PairSet
    dev: ExampleSet | PairSet | None
    challenges: dict[str, ExampleSet | PairSet] = field(default_factory=dict)
    protocol: str = ""
    pooled_challenges: list[str] | None = None
    kind: str = "classification"
    metric: str = "accuracy"
    tokenizer: object = None
    suite: object = None

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise DataError(f"task {self.name}: kind must be one of {tuple(TASK_KINDS)}, got {self.kind!r}")
        kind = TASK_KINDS[self.kind]
        if kind.suite != (self.suite is not None) or (self.suite is not None and self.dev is not None):
            raise DataError(f"task {self.name}: a {self.kind} task has " + ("a suite and no dev set" if kind.suite
                                                                            else "no suite"))
        if kind.suite:
            if not isinstance(self.train, ExampleSet):
                raise DataError(f"task {self.name}: the calibration texts must be an ExampleSet")
            return
        want = PairSet if kind.pairs else ExampleSet
        for s in [self.train, self.dev, *self.challenges.values()]:
            if not isinstance(s, want):
                raise DataError(f"task {self.name} ({self.kind}): set {s.name} is a {type(s).__name__}, "
                                f"expected {want.__name__}")
        if not kind.labelled:
            return
        for s in [self.train, self.dev, *self.challenges.values()]:
            if s.prediction_map is None and s.label_names != self.label_names:
                raise DataError(f"set {s.name} has labels {s.label_names} but task {self.name} predicts "
                                f"{self.label_names}: give it a prediction_map")
            if s.prediction_map is not None and sorted(s.prediction_map) != list(range(len(self.label_names))):
                raise DataError(f"set {s.name}: prediction_map must map every task label id "
                                f"0..{len(self.label_names) - 1}")
        unknown = set(self.pooled_challenges or []) - set(self.challenges)
        if unknown:
            raise DataError(f"task {self.name}: pooled challenge sets {sorted(unknown)} do not exist")

    @property
    def pooled(self) -> list[str]:
        return list(self.pooled_challenges) if self.pooled_challenges is not None else list(self.challenges)

    def eval_sets(self) -> dict:
        if self.suite is not None:
            return self.suite.eval_sets()
        return {"dev": self.dev, **self.challenges}

    @classmethod
    def from_datasets(cls, train=None, dev=None, challenges: dict | None = None, *, text: str | None = None,
                      text_pair: str | None = None, label: str | None = None, target: str | None = None,
                      labels: list[str] | None = None, name: str = "datasets", train_size: int | None = None,
                      eval_size: int | None = None, seed: int = 0) -> "Task":
        """A task from 🤗 ``datasets``: ``train`` and ``dev`` Datasets (+ ``challenges`` {name:
        Dataset}), or ``train`` a ``DatasetDict`` holding the splits. Columns, splits and label names:
        ``data/hf_datasets.py``; ``target`` names a generation task's reference column. The seeded
        caps of ``load_task`` apply (``train_size``, ``eval_size``)."""
        if isinstance(train, dict):
            if dev is not None:
                raise DataError("Task.from_datasets: a DatasetDict holds the dev split already; drop dev=")
            train, dev, extra = hf.splits_of(train, "train")
            challenges = {**extra, **(challenges or {})}
        sets = {"train": train, "dev": dev, **(challenges or {})}
        for set_name, ds in sets.items():
            if not hf.is_dataset(ds):
                raise DataError(f"Task.from_datasets: {set_name} must be a datasets.Dataset, got {type(ds).__name__}")
        cols = hf.infer_columns(train, text, text_pair, label, target)
        where = lambda set_name: f"{name} {set_name}"  # noqa: E731
        if TASK_KINDS[cols["task_type"]].pairs:
            built = {n: PairSet(n, hf.texts(ds, cols["text"], where(n)),
                                [[t] for t in hf.texts(ds, cols["target"], where(n))], source=f"datasets:{n}")
                     for n, ds in sets.items()}
            names, metric = None, "rougeL"
        else:
            names = hf.label_names(train, cols["label"], labels, where("train"))
            built = {n: ExampleSet(n, hf.texts(ds, cols["text"], where(n)),
                                   hf.label_ids(ds, cols["label"], names, where(n)), names,
                                   hf.texts(ds, cols["text_pair"], where(n)) if cols["text_pair"] else None,
                                   source=f"datasets:{n}")
                     for n, ds in sets.items()}
            metric = "accuracy"
        used = ", ".join(f"{k}={v}" for k, v in cols.items() if v and k != "task_type")
        task = cls(name, names, built.pop("train"), built.pop("dev"), built, kind=cols["task_type"], metric=metric,
                   protocol=f"datasets objects ({used}): {len(train)} train / {len(dev)} dev")
        return cap_task(task, train_size, eval_size, seed)


def labels_from_names(values, label_names: list[str], where: str) -> list[int]:
    """Turn label strings or ints into ids; an unknown label is an error naming file and value."""
    index = {name: i for i, name in enumerate(label_names)}
    out = []
    for row, value in enumerate(values):
        key = str(value).strip()
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


def train_dev_split(examples: ExampleSet, fraction: float, seed: int) -> tuple[ExampleSet, ExampleSet, str]:
    """``examples`` split into ``train`` (``fraction`` of each class, seeded) and ``dev``, and the words a
    task's protocol gives the split."""
    if not 0.0 < fraction < 1.0:
        raise DataError(f"train_fraction must be in (0, 1), got {fraction}")
    first, second = stratified_split(examples.labels, fraction, seed)
    return (examples.subset(first, "train"), examples.subset(second, "dev"),
            f"seeded (seed {seed}) stratified {fraction:.0%}/{1 - fraction:.0%} split")


def capped(examples: ExampleSet | PairSet, size: int | None, seed: int) -> ExampleSet | PairSet:
    """A seeded random subset of exactly ``size`` examples (all if the set is smaller), stratified
    by label (and group, if any) for labelled sets: each stratum gets its share rounded down, and
    the remaining places go to the strata with the largest remainders (largest-remainder method)."""
    if size is None or size >= len(examples):
        return examples
    if size < 1:
        raise ConfigError(f"size cap must be >= 1, got {size}")
    rng = np.random.default_rng(seed)
    if isinstance(examples, PairSet):
        return examples.subset(sorted(rng.permutation(len(examples))[:size].tolist()))
    keys = [(y, g) for y, g in zip(examples.labels, examples.groups or [None] * len(examples))]
    strata: dict = {}
    for i, key in enumerate(keys):
        strata.setdefault(key, []).append(i)
    order = sorted(strata, key=str)
    exact = [size * len(strata[key]) / len(examples) for key in order]
    takes = [int(x) for x in exact]
    for j in sorted(range(len(order)), key=lambda j: (-(exact[j] - takes[j]), j))[:size - sum(takes)]:
        takes[j] += 1
    picked = []
    for key, take in zip(order, takes):
        picked.extend(rng.permutation(strata[key])[:take].tolist())
    return examples.subset(sorted(picked))


def cap_task(task: Task, train_size: int | None, eval_size: int | None, seed: int) -> Task:
    """Seeded size caps of ``load_task`` and ``Task.from_datasets``: ``train_size`` caps the training
    set, ``eval_size`` each evaluation set (``capped``); the caps are recorded in the protocol."""
    task.train = capped(task.train, train_size, seed)
    if task.suite is not None:  # an LLM suite: a seeded sample of items per lm-eval task (llm/suite.py)
        task.suite = task.suite.capped(eval_size, seed + 1)
    else:
        task.dev = capped(task.dev, eval_size, seed + 1)
        task.challenges = {k: capped(v, eval_size, seed + 2) for k, v in task.challenges.items()}
    how = "seeded sample per task" if task.suite is not None else "seeded, stratified"
    caps = [f"train capped to {len(task.train)}" if train_size is not None else "",
            f"eval sets capped to {eval_size} ({how})" if eval_size is not None else ""]
    task.protocol = "; ".join([task.protocol] + [c for c in caps if c])
    return task
