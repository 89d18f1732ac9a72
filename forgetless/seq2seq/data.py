"""Seq2seq tasks: source → target pairs with one or more references per example.

* ``synthetic`` (default, embedded): a seeded look-up task in its own made-up vocabulary
  ("ask <entity> : <entity> has <attr> <attr> . …" → the asked entity's two attributes), with a
  word-level tokenizer built on the fly; runs offline in seconds.
* ``tweetqa``: TweetQA (Xiong et al. 2019) train / dev from ``--data-dir`` (``tweetqa/*.json``);
  source "question: Q context: tweet", every gold answer is a reference (NASH Table 1).
* ``samsum`` / ``xsum``: summarisation sets that exist only as evaluation data here (SAMSum
  validation, an XSum test sample). As tasks they use a seeded 80 / 20 split of that file
  (protocol recorded in ``Seq2SeqTask.protocol``); ``eval_sets`` adds them to any run.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..errors import ConfigError, DataError


@dataclass
class PairSet:
    name: str
    sources: list[str]
    references: list[list[str]]  # first reference is the training target
    source: str = ""

    def __post_init__(self):
        if not self.sources:
            raise DataError(f"set {self.name} ({self.source}) is empty")
        if len(self.sources) != len(self.references):
            raise DataError(f"set {self.name}: {len(self.sources)} sources, {len(self.references)} references")

    @property
    def targets(self) -> list[str]:
        return [refs[0] for refs in self.references]

    def __len__(self) -> int:
        return len(self.sources)

    def subset(self, index, name: str | None = None) -> "PairSet":
        index = list(index)
        return PairSet(name or self.name, [self.sources[i] for i in index], [self.references[i] for i in index],
                       self.source)

    def head(self, n: int | None) -> "PairSet":
        return self if n is None or n >= len(self) else self.subset(range(n))


@dataclass
class Seq2SeqTask:
    name: str
    train: PairSet
    dev: PairSet
    extra: dict[str, PairSet] = field(default_factory=dict)
    metric: str = "rougeL"  # headline metric
    with_meteor: bool = True
    protocol: str = ""
    tokenizer: object = None  # set for tasks with their own vocabulary (synthetic)


# ----- synthetic ----------------------------------------------------------------------------------
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"


def _words(rng: random.Random, n: int, syllables: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables)))
    return sorted(out)


def synthetic_task(n_train: int = 2000, n_dev: int = 200, facts: int = 4, seed: int = 0) -> Seq2SeqTask:
    """Seeded look-up task in a made-up vocabulary (36 entities, 24 attribute words)."""
    rng = random.Random(seed)
    entities = _words(rng, 36, 3)
    attrs = [w for w in _words(rng, 40, 2) if w not in entities][:24]

    def make(n: int) -> tuple[list[str], list[list[str]]]:
        sources, refs = [], []
        for _ in range(n):
            ents = rng.sample(entities, facts)
            values = [rng.sample(attrs, 2) for _ in ents]
            asked = rng.randrange(facts)
            body = " . ".join(f"{e} has {a} {b}" for e, (a, b) in zip(ents, values))
            sources.append(f"ask {ents[asked]} : {body} .")
            refs.append([" ".join(values[asked])])
        return sources, refs

    train, dev = make(n_train), make(n_dev)
    vocab = SPECIALS + sorted(set(entities) | set(attrs) | {"ask", ":", "has", "."})
    return Seq2SeqTask("synthetic", PairSet("train", *train, source="synthetic"),
                       PairSet("dev", *dev, source="synthetic"), metric="rougeL",
                       protocol=f"synthetic look-up, seed {seed}, {n_train} train / {n_dev} dev",
                       tokenizer=word_tokenizer(vocab))


def word_tokenizer(vocab: list[str]):
    """A whitespace word-level fast tokenizer over ``vocab`` ([PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", eos_token="[SEP]", bos_token="[CLS]")


# ----- real data ----------------------------------------------------------------------------------
def _data_dir(data_dir) -> Path:
    if data_dir is None:
        raise ConfigError("this task reads local files: pass --data-dir (e.g. ../shared/data)")
    path = Path(data_dir)
    if not path.is_dir():
        raise DataError(f"data directory {path} does not exist")
    return path


def _tweetqa(path: Path, name: str) -> PairSet:
    try:
        rows = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read TweetQA JSON ({exc})") from exc
    sources, refs = [], []
    for row in rows:
        answers = [a for a in row.get("Answer") or [] if a and a.strip()]
        if not answers:
            continue
        sources.append(f"question: {row['Question']} context: {row['Tweet']}")
        refs.append(answers)
    return PairSet(name, sources, refs, source=str(path))


def _jsonl(path: Path, src: str, tgt: str, name: str) -> PairSet:
    sources, refs = [], []
    try:
        with path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    sources.append(" ".join(row[src].split()))
                    refs.append([" ".join(row[tgt].split())])
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        raise DataError(f"{path}: cannot read {src}/{tgt} JSONL ({exc})") from exc
    return PairSet(name, sources, refs, source=str(path))


def samsum_set(data_dir) -> PairSet:
    return _jsonl(_data_dir(data_dir) / "samsum" / "validation_context_response.jsonl", "context", "response", "samsum")


def xsum_set(data_dir) -> PairSet:
    return _jsonl(_data_dir(data_dir) / "xsum" / "test_1000_llm_decoding.jsonl", "document", "summary", "xsum")


def _split(full: PairSet, seed: int, name: str) -> Seq2SeqTask:
    order = list(range(len(full)))
    random.Random(seed).shuffle(order)
    cut = int(0.8 * len(order))
    return Seq2SeqTask(name, full.subset(order[:cut], "train"), full.subset(order[cut:], "dev"), metric="rougeL",
                       with_meteor=False, protocol=f"{name}: seeded (seed {seed}) 80/20 split of {full.source}")


def load_task(name: str = "synthetic", data_dir=None, n_train: int | None = None, n_dev: int | None = None,
              seed: int = 0, eval_sets: tuple[str, ...] = ()) -> Seq2SeqTask:
    """A task by name, optionally cut to the first ``n_train`` / ``n_dev`` examples (train rows are
    shuffled with ``seed`` first), plus evaluation-only ``eval_sets`` (``samsum``, ``xsum``)."""
    if name == "synthetic":
        task = synthetic_task(n_train or 2000, n_dev or 200, seed=seed)
    elif name == "tweetqa":
        root = _data_dir(data_dir) / "tweetqa"
        train, dev = _tweetqa(root / "train.json", "train"), _tweetqa(root / "dev.json", "dev")
        order = list(range(len(train)))
        random.Random(seed).shuffle(order)
        task = Seq2SeqTask("tweetqa", train.subset(order), dev, metric="meteor",
                           protocol="TweetQA train (seeded shuffle) / dev; all gold answers are references")
    elif name in ("samsum", "xsum"):
        task = _split(samsum_set(data_dir) if name == "samsum" else xsum_set(data_dir), seed, name)
    else:
        raise ConfigError(f"unknown seq2seq task {name!r}; choose from synthetic, tweetqa, samsum, xsum")
    task.train, task.dev = task.train.head(n_train), task.dev.head(n_dev)
    for extra in eval_sets:
        if extra not in ("samsum", "xsum"):
            raise ConfigError(f"unknown evaluation set {extra!r}; choose from samsum, xsum")
        task.extra[extra] = (samsum_set if extra == "samsum" else xsum_set)(data_dir).head(n_dev)
    return task


# ----- encoding -----------------------------------------------------------------------------------
def encode_pairs(pairs: PairSet, tokenizer, eos_token_id: int, max_source: int = 128,
                 max_target: int = 32) -> list[dict]:
    """Rows with ``input_ids``, ``attention_mask`` and ``labels`` (target tokens + EOS)."""
    enc = tokenizer(pairs.sources, truncation=True, max_length=max_source)
    tgt = tokenizer(pairs.targets, add_special_tokens=False, truncation=True, max_length=max_target - 1)
    return [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
             "labels": list(tgt["input_ids"][i]) + [eos_token_id]} for i in range(len(pairs))]


class Seq2SeqCollator:
    """Pads sources with the pad id and labels with -100 (ignored by losses)."""

    def __init__(self, pad_token_id: int):
        self.pad_token_id = pad_token_id

    def __call__(self, rows: list[dict]) -> dict[str, torch.Tensor]:
        src = max(len(r["input_ids"]) for r in rows)
        tgt = max(len(r["labels"]) for r in rows)
        pad = lambda seq, n, fill: list(seq) + [fill] * (n - len(seq))  # noqa: E731
        return {
            "input_ids": torch.tensor([pad(r["input_ids"], src, self.pad_token_id) for r in rows]),
            "attention_mask": torch.tensor([pad(r["attention_mask"], src, 0) for r in rows]),
            "labels": torch.tensor([pad(r["labels"], tgt, -100) for r in rows]),
        }
