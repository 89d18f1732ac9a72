"""Built-in synthetic shortcut task: entailment where lexical overlap is a shortcut.

Modelled on MNLI → HANS (McCoy et al. 2019). Each example is made from a template. The
*overlap heuristic* says "entailment" exactly when every noun of the hypothesis appears in the
premise. In training most examples follow it (high overlap + entailment, or a new noun +
non-entailment); a share ``hard_fraction`` breaks it (swapped roles, passive swaps, embedded
or conditional clauses, hypernym entailments). The challenge set has only high-overlap pairs with
balanced labels, as HANS does. Every example knows whether the heuristic gets it right
(``hard`` = the heuristic is wrong). Vocabulary and templates are this module's own.
"""
from __future__ import annotations

import random

from ..errors import ConfigError
from .task import ExampleSet, Task

NOUNS = ["doctor", "lawyer", "artist", "student", "senator", "manager", "author", "judge", "banker",
         "athlete", "actor", "secretary", "tourist", "president", "scientist", "professor", "farmer", "pilot",
         "teacher", "nurse", "chef", "soldier", "singer", "writer", "baker", "dancer", "editor", "painter",
         "officer", "engineer"]
HYPERNYMS = ["person", "someone", "somebody"]
VERBS = [("saw", "seen"), ("helped", "helped"), ("called", "called"), ("thanked", "thanked"),
         ("admired", "admired"), ("recognized", "recognized"), ("avoided", "avoided"),
         ("supported", "supported"), ("introduced", "introduced"), ("advised", "advised"),
         ("paid", "paid"), ("contacted", "contacted"), ("visited", "visited"), ("mentioned", "mentioned"),
         ("encouraged", "encouraged"), ("followed", "followed"), ("warned", "warned"), ("met", "met"),
         ("hired", "hired"), ("praised", "praised")]
INTRANSITIVE = ["ran", "slept", "waited", "danced", "laughed", "arrived", "shouted", "smiled", "left", "sang",
                "resigned", "stayed"]
ADJECTIVES = ["old", "young", "tall", "famous", "happy", "quiet", "clever", "tired", "angry", "busy"]
SUFFIXES = ["yesterday", "at noon", "in the park", "last week", "on monday", "at the station", "again"]
CERTAIN = ["certainly", "clearly", "obviously"]
UNCERTAIN = ["maybe", "perhaps", "probably"]

LABELS = ["entailment", "non-entailment"]
ENT, NON = 0, 1


def _modified(rng, noun: str) -> str:
    """A noun, sometimes with an adjective that then stays with it in premise and hypothesis."""
    return f"{rng.choice(ADJECTIVES)} {noun}" if rng.random() < 0.35 else noun


def _bare_and_modified(rng) -> dict:
    """Two nouns, the first without an adjective (it gets one in the premise only)."""
    a, b = rng.sample(NOUNS, 2)
    return {"a": a, "b": _modified(rng, b)}


# What a template draws, by name: the words it fills into its patterns, drawn in the order named.
DRAWS = {
    "a": lambda rng: {"a": _modified(rng, rng.choice(NOUNS))},
    "ab": lambda rng: dict(zip("ab", [_modified(rng, noun) for noun in rng.sample(NOUNS, 2)])),
    "abc": lambda rng: dict(zip("abc", [_modified(rng, noun) for noun in rng.sample(NOUNS, 3)])),
    "a-b": _bare_and_modified,
    "adj": lambda rng: {"adj": rng.choice(ADJECTIVES)},
    "v": lambda rng: dict(zip(("v", "pp"), rng.choice(VERBS))),  # a transitive verb and its participle
    "vv": lambda rng: dict(zip("vw", (verb for verb, _ in rng.sample(VERBS, 2)))),
    "w": lambda rng: {"w": rng.choice(INTRANSITIVE)},
    "ww": lambda rng: dict(zip("vw", rng.sample(INTRANSITIVE, 2))),
    "sure": lambda rng: {"adv": rng.choice(CERTAIN)},
    "unsure": lambda rng: {"adv": rng.choice(UNCERTAIN)},
    "kind": lambda rng: {"kind": rng.choice(HYPERNYMS)},
}


def _template(draws: str, premise: str, hypothesis: str | tuple[str, ...]):
    """A template: ``rng`` → (premise, hypothesis), from its draws (``DRAWS``) and its patterns (a
    tuple of hypothesis patterns: one of them, drawn last)."""
    def make(rng):
        words = {key: value for draw in draws.split() for key, value in DRAWS[draw](rng).items()}
        chosen = rng.choice(hypothesis) if isinstance(hypothesis, tuple) else hypothesis
        return premise.format(**words), chosen.format(**words)
    return make


# name → (label, high_overlap, draws, premise, hypothesis)
PATTERNS = {
    "drop_adjective": (ENT, True, "a-b v adj", "the {adj} {a} {v} the {b}", "the {a} {v} the {b}"),
    "passive": (ENT, True, "ab v", "the {a} {v} the {b}", "the {b} was {pp} by the {a}"),
    "conjunction": (ENT, True, "ab w", "the {a} and the {b} {w}", "the {b} {w}"),
    "relative_subject": (ENT, True, "ab v w", "the {a} who {v} the {b} {w}", "the {a} {w}"),
    "certain_adverb": (ENT, True, "a w sure", "{adv} the {a} {w}", "the {a} {w}"),
    "swap_roles": (NON, True, "ab v", "the {a} {v} the {b}", "the {b} {v} the {a}"),
    "passive_swap": (NON, True, "ab v", "the {a} {v} the {b}", "the {a} was {pp} by the {b}"),
    "relative_object": (NON, True, "ab v w", "the {a} who {v} the {b} {w}", "the {b} {w}"),
    "uncertain_adverb": (NON, True, "a w unsure", "{adv} the {a} {w}", "the {a} {w}"),
    "conditional": (NON, True, "ab ww", "if the {a} {v} , the {b} {w}", "the {b} {w}"),
    "new_noun": (NON, False, "abc vv", "the {a} {v} the {b}", ("the {c} {v} the {b}", "the {a} {w} the {c}")),
    "hypernym": (ENT, False, "ab v kind", "the {a} {v} the {b}", "{kind} {v} the {b}"),
}
# name → (template, label, high_overlap)
TEMPLATES = {name: (_template(*patterns), label, high) for name, (label, high, *patterns) in PATTERNS.items()}


def heuristic_is_right(template: str) -> bool:
    """The overlap heuristic predicts entailment iff overlap is high; is that the gold label?"""
    _, label, high = TEMPLATES[template]
    return (label == ENT) == high


EASY = [name for name in TEMPLATES if heuristic_is_right(name)]
HARD = [name for name in TEMPLATES if not heuristic_is_right(name)]


def _make(name: str, templates: list[str], n: int, rng: random.Random) -> ExampleSet:
    a, b, labels, hard, groups = [], [], [], [], []
    for i in range(n):
        template = templates[i % len(templates)]
        premise, hypothesis = TEMPLATES[template][0](rng)
        if rng.random() < 0.3:  # a sentence adverbial shared by both sides keeps the label
            suffix = rng.choice(SUFFIXES)
            premise, hypothesis = f"{premise} {suffix}", f"{hypothesis} {suffix}"
        a.append(premise)
        b.append(hypothesis)
        labels.append(TEMPLATES[template][1])
        hard.append(not heuristic_is_right(template))
        groups.append(template)
    order = list(range(n))
    rng.shuffle(order)
    pick = lambda xs: [xs[i] for i in order]  # noqa: E731
    return ExampleSet(name, pick(a), pick(labels), LABELS, pick(b), pick(hard), pick(groups), source="synthetic")


def _in_distribution(name: str, n: int, hard_fraction: float, rng: random.Random) -> ExampleSet:
    n_hard = int(round(n * hard_fraction))
    entail_easy = [t for t in EASY if TEMPLATES[t][1] == ENT]
    non_easy = [t for t in EASY if TEMPLATES[t][1] == NON]
    # interleave so that easy examples are half entailment, half non-entailment
    balanced = [t for pair in zip(entail_easy, non_easy * len(entail_easy)) for t in pair]
    easy = _make(name, balanced, n - n_hard, rng)
    if n_hard == 0:
        return easy
    hard = _make(name, HARD, n_hard, rng)
    merged = ExampleSet(name, easy.text_a + hard.text_a, easy.labels + hard.labels, LABELS,
                        easy.text_b + hard.text_b, easy.hard + hard.hard, easy.groups + hard.groups, source="synthetic")
    order = list(range(len(merged)))
    rng.shuffle(order)
    return merged.subset(order)


def synthetic_shortcut_task(n_train: int = 2000, n_dev: int = 500, n_challenge: int = 600,
                            hard_fraction: float = 0.1, seed: int = 0) -> Task:
    """The embedded default task. ``hard_fraction`` is the share of shortcut-breaking examples
    in train and dev; the challenge set is all high-overlap with balanced labels."""
    if not 0.0 <= hard_fraction <= 1.0:
        raise ConfigError(f"hard_fraction must be in [0, 1], got {hard_fraction}")
    rng = random.Random(seed)
    train = _in_distribution("train", n_train, hard_fraction, rng)
    dev = _in_distribution("dev", n_dev, hard_fraction, rng)
    high = [name for name, (_, _, high) in TEMPLATES.items() if high]
    entail = [t for t in high if TEMPLATES[t][1] == ENT]
    non = [t for t in high if TEMPLATES[t][1] == NON]
    challenge = _make("challenge", entail + non, n_challenge, rng)
    return Task("synthetic", LABELS, train, dev, {"challenge": challenge},
                protocol=(f"synthetic overlap-shortcut task (seed {seed}): train {n_train}, dev {n_dev}, "
                          f"challenge {n_challenge}; hard_fraction {hard_fraction}"))
