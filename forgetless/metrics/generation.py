"""Generation metrics: ROUGE-1/2/L (``rouge-score``, Porter stemming, F-measure) and METEOR
(Banerjee & Lavie 2005, nltk's implementation), as NASH reports them (Ko et al. Tables 1-2:
METEOR and ROUGE-L for TweetQA, ROUGE for summarisation). Scores are in percent.

METEOR matches words in three stages: exact, Porter stem, WordNet synonym. Offline, WordNet comes
from Debian's ``wordnet-base`` and
``wordnet-sense-index`` packages (``/usr/share/wordnet``): ``ensure_wordnet`` links those
files (copies, 28 MB: nltk refuses symlinks and hard links) into a forgetless-owned ``nltk_data/corpora/wordnet`` folder (adding the ``lexnames`` file
nltk expects, the fixed WordNet 3.0 list) and puts it on nltk's search path. Without WordNet the
synonym stage is skipped and the result says so (``meteor_stages``).
"""
from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

_LEXNAMES = ("adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
             "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
             "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
             "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
             "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
             "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather "
             "adj.ppl").split()
_POS_OF = {"adj": 3, "adv": 4, "noun": 1, "verb": 2}
WORDNET_SOURCES = ("/usr/share/wordnet",)
_WORDNET = None


def _nltk_home() -> Path:
    return Path(os.environ.get("FORGETLESS_NLTK_DATA", Path.home() / ".cache" / "forgetless" / "nltk_data"))


def ensure_wordnet():
    """nltk's WordNet reader, setting it up from a local WordNet 3.0 database if needed; ``None``
    when no WordNet is available (METEOR then uses exact + stem matching only)."""
    global _WORDNET
    if _WORDNET is not None:
        return _WORDNET or None
    import nltk  # here, not at module level: nltk costs ~0.5 s of start-up for commands that never score text
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    home = _nltk_home()
    if str(home) not in nltk.data.path:
        nltk.data.path.append(str(home))
    try:
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        _WORDNET = wordnet
        return wordnet
    except LookupError:
        pass
    sources = [os.environ["FORGETLESS_WORDNET_DIR"]] if os.environ.get("FORGETLESS_WORDNET_DIR") else []
    for source in [Path(s) for s in (*sources, *WORDNET_SOURCES)]:
        if not (source / "data.noun").is_file():
            continue
        target = home / "corpora" / "wordnet"
        target.mkdir(parents=True, exist_ok=True)
        for item in source.iterdir():
            copy = target / item.name
            if item.is_file() and not copy.exists():  # nltk refuses symlinks and hard links
                shutil.copyfile(item, copy)
        lexnames = target / "lexnames"
        if not lexnames.exists():
            tmp = target / f".lexnames.{os.getpid()}"
            tmp.write_text("".join(f"{i:02d}\t{n}\t{_POS_OF[n.split('.')[0]]}\n" for i, n in enumerate(_LEXNAMES)))
            os.replace(tmp, lexnames)
        try:
            with warnings.catch_warnings():  # "multilingual functions are not available": no OMW, fine
                warnings.simplefilter("ignore", UserWarning)
                reader = WordNetCorpusReader(nltk.data.find("corpora/wordnet"), None)
            reader.synsets("dog")
            _WORDNET = reader
            return reader
        except (LookupError, OSError, ValueError):
            continue
    _WORDNET = False
    return None


class _NoSynonyms:
    """Stand-in WordNet with no synsets: METEOR's synonym stage matches nothing."""

    @staticmethod
    def synsets(*args, **kwargs):
        return []


def meteor_stages() -> str:
    return "exact+stem+synonym" if ensure_wordnet() is not None else "exact+stem"


def _tokens(text: str) -> list[str]:
    return text.lower().split()


def meteor(predictions: list[str], references: list[list[str]]) -> float:
    """Mean sentence METEOR (best over each example's references), percent."""
    from nltk.translate.meteor_score import meteor_score

    wordnet = ensure_wordnet() or _NoSynonyms()
    total = 0.0
    for pred, refs in zip(predictions, references):
        total += meteor_score([_tokens(r) for r in refs], _tokens(pred), wordnet=wordnet)
    return 100.0 * total / max(len(predictions), 1)


def rouge(predictions: list[str], references: list[list[str]]) -> dict[str, float]:
    """Mean ROUGE-1/2/L F1 (percent), best reference per example."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    sums = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for pred, refs in zip(predictions, references):
        best = {k: 0.0 for k in sums}
        for ref in refs:
            scores = scorer.score(ref, pred)
            for k in sums:
                best[k] = max(best[k], scores[k].fmeasure)
        for k in sums:
            sums[k] += best[k]
    n = max(len(predictions), 1)
    return {k: 100.0 * v / n for k, v in sums.items()}


def score_texts(predictions: list[str], references: list[list[str]], with_meteor: bool = True) -> dict:
    """ROUGE (and METEOR), the number of examples, the share of distinct outputs (a model collapsed
    onto one frequent answer scores near 0) and three examples, for one evaluation set."""
    scores = rouge(predictions, references)
    if with_meteor:
        scores["meteor"] = meteor(predictions, references)
        scores["meteor_stages"] = meteor_stages()
    scores["n"] = len(predictions)
    scores["distinct_predictions"] = len(set(predictions)) / max(len(predictions), 1)
    scores["examples"] = [{"prediction": p, "reference": r[0]} for p, r in list(zip(predictions, references))[:3]]
    return scores
