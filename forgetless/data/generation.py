"""Generation tasks: source → reference texts (``PairSet``), registered beside the classification
tasks (NASH, Ko et al. 2023, evaluates on TweetQA and summarisation).

* ``synthetic-lookup`` (built-in, seeded): a look-up task in its own made-up vocabulary
  ("ask <entity> : <entity> has <attr> <attr> . …" → the asked entity's two attributes), with a
  word-level tokenizer built on the fly (``Task.tokenizer``); runs offline in seconds.
* ``tweetqa``: TweetQA (Xiong et al. 2019) train / dev from the data folder (``tweetqa/*.json``);
  source "question: Q context: tweet", every gold answer is a reference (NASH Table 1).
* ``samsum`` / ``xsum``: summarisation sets that exist only as evaluation data here (SAMSum
  validation, an XSum test sample); as tasks they use a seeded 80 / 20 split of that file. Any
  generation task can add them as extra evaluation sets (``eval_sets``).
"""
from __future__ import annotations

import random
from pathlib import Path

from ..errors import ConfigError
from .files import read_table, require_columns
from .task import PairSet, Task

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
EXTRA_SETS = {"samsum": ("samsum/validation_context_response.jsonl", "context", "response"),
              "xsum": ("xsum/test_1000_llm_decoding.jsonl", "document", "summary")}
_CONSONANTS, _VOWELS = "bdfgklmnprstvz", "aeiou"


def _words(rng: random.Random, n: int, syllables: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(syllables)))
    return sorted(out)


def synthetic_lookup_task(n_train: int = 2000, n_dev: int = 200, facts: int = 4, seed: int = 0) -> Task:
    """Seeded look-up task in a made-up vocabulary (36 entities, 24 attribute words)."""
    rng = random.Random(seed)
    entities = _words(rng, 36, 3)
    attrs = [w for w in _words(rng, 40, 2) if w not in entities][:24]

    def make(n: int, name: str) -> PairSet:
        sources, refs = [], []
        for _ in range(n):
            ents = rng.sample(entities, facts)
            values = [rng.sample(attrs, 2) for _ in ents]
            asked = rng.randrange(facts)
            body = " . ".join(f"{e} has {a} {b}" for e, (a, b) in zip(ents, values))
            sources.append(f"ask {ents[asked]} : {body} .")
            refs.append([" ".join(values[asked])])
        return PairSet(name, sources, refs, source="synthetic-lookup")

    train, dev = make(n_train, "train"), make(n_dev, "dev")
    vocab = SPECIALS + sorted(set(entities) | set(attrs) | {"ask", ":", "has", "."})
    return Task("synthetic-lookup", None, train, dev, kind="generation", metric="rougeL",
                protocol=f"synthetic look-up (seed {seed}): {n_train} train / {n_dev} dev",
                tokenizer=word_tokenizer(vocab))


def word_tokenizer(vocab: list[str]):
    """A whitespace word-level fast tokenizer over ``vocab`` ([PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                   cls_token="[CLS]", sep_token="[SEP]", eos_token="[SEP]", bos_token="[CLS]")


def _tweetqa(path: Path, name: str) -> PairSet:
    rows = read_table(path)
    require_columns(rows, ["Question", "Tweet"], str(path))
    sources, refs = [], []
    for row in rows:
        answers = [a for a in row.get("Answer") or [] if isinstance(a, str) and a.strip()]
        if answers:
            sources.append(f"question: {row['Question']} context: {row['Tweet']}")
            refs.append(answers)
    return PairSet(name, sources, refs, source=str(path))


def extra_set(name: str, data_dir: Path) -> PairSet:
    """SAMSum validation or the XSum sample (``EXTRA_SETS``: file, source and target fields) as an
    evaluation-only set."""
    if name not in EXTRA_SETS:
        raise ConfigError(f"unknown evaluation set {name!r}; choose from {', '.join(EXTRA_SETS)}")
    file, src, tgt = EXTRA_SETS[name]
    path = data_dir / file
    rows = read_table(path)
    require_columns(rows, [src, tgt], str(path))
    return PairSet(name, [" ".join(str(r[src]).split()) for r in rows], [[" ".join(str(r[tgt]).split())] for r in rows],
                   source=str(path))


def tweetqa_task(data_dir: Path, seed: int = 0) -> Task:
    root = data_dir / "tweetqa"
    train, dev = _tweetqa(root / "train.json", "train"), _tweetqa(root / "dev.json", "dev")
    order = list(range(len(train)))
    random.Random(seed).shuffle(order)
    return Task("tweetqa", None, train.subset(order), dev, kind="generation", metric="meteor",
                protocol="TweetQA train (seeded shuffle) / dev; all gold answers are references")


def split_task(name: str, data_dir: Path, seed: int = 0) -> Task:
    """SAMSum or XSum as a task: seeded 80 / 20 split of the evaluation file."""
    full = extra_set(name, data_dir)
    order = list(range(len(full)))
    random.Random(seed).shuffle(order)
    cut = int(0.8 * len(order))
    return Task(name, None, full.subset(order[:cut], "train"), full.subset(order[cut:], "dev"), kind="generation",
                metric="rougeL", protocol=f"{name}: seeded (seed {seed}) 80/20 split of {full.source}")
