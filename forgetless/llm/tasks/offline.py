"""Readers of the offline copies of the standard zero-shot sets (the ``custom_dataset`` of the task
YAMLs beside this file), each giving the rows in the layout of the Hugging Face dataset that
lm-evaluation-harness's own task reads, so ``doc_to_text`` / ``doc_to_choice`` / ``doc_to_target``
are those of lm-eval's YAMLs unchanged.

lm-eval calls ``custom_dataset(**metadata, **dataset_kwargs)``: the data folder comes as
``data_dir`` (forgetless passes ``TaskManager(metadata={"data_dir": ...})``; on the command line
``lm_eval --include_path DIR --metadata '{"data_dir": "..."}'``). It is the folder holding the
sets (``arc/``, ``piqa/`` … as in ``../shared/data/llm``) or a folder with such an ``llm/`` inside.
A missing or malformed file is one ``DataError`` naming the file (and the line).

Layouts and caveats of the copies: ``../shared/data/llm/README.md``. In short: ARC-Challenge is the
AI2 test split less its 22 items keyed 1-4; ARC-Easy is the dev split (from a derived CSV: rows whose
options were lost are dropped); HellaSwag's text had its WikiHow markers removed already and its two
context halves joined (lm-eval capitalises the second half); WikiText-2 is split into articles at
its top-level `` = Title = `` lines for lm-eval's document-level ``wikitext``.

The generation suite (``llm-generation``; ``generate_until`` tasks) reads IFEval's prompts, GSM8K test,
SAMSum validation, the XSum sample and TweetQA dev, and builds the passkey prompts (no file: seeded).
Its items are scored by lm-eval's own per-item functions where lm-eval has them: IFEval's rule
checkers (``lm_eval.tasks.ifeval``: prompt- and instruction-level accuracy, strict and loose), GSM8K's
answer extraction (the YAML's regex filter and ``exact_match``), TyDiQA's SQuAD-style exact match
and token F1 (``lm_eval.tasks.tydiqa``) for TweetQA; ROUGE-L is ``rouge-score``'s (Porter stemming,
F-measure, as forgetless's ``metrics/generation.py``). IFEval keeps the 477 of its 541 prompts whose
checkers run offline: the other 64 count sentences or capitalised words with NLTK's ``punkt_tab``
model, which no package ships (lm-eval downloads it; forgetless never reaches the network).
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import random
import re
from pathlib import Path

import datasets
from lm_eval.tasks.hellaswag.utils import preprocess
# lm-eval's own prompt functions of WinoGrande (partial scoring) and WikiText (detokenizer, word /
# byte counts), named by the YAMLs beside this file
from lm_eval.tasks.wikitext.preprocess_wikitext import process_results, wikitext_detokenizer  # noqa: F401
from lm_eval.tasks.winogrande.preprocess_winogrande import doc_to_choice, doc_to_target, doc_to_text  # noqa: F401

from forgetless.errors import DataError
from forgetless.fsutil import json_lines

LETTERS = "ABCDE"
ARTICLE_TITLE = re.compile(r"^ = [^=].* = $")  # a top-level heading of WikiText (sections are " = = x = = ")


def folder(data_dir) -> Path:
    """The folder of the LLM sets: ``data_dir`` itself, or its ``llm/`` subfolder when it has one."""
    if not data_dir:
        raise DataError("the offline LLM tasks need the data folder: pass --data-dir DIR (lm_eval: --metadata "
                        "'{\"data_dir\": \"DIR\"}')")
    root = Path(data_dir).expanduser()
    return root / "llm" if (root / "llm").is_dir() else root


def _file(data_dir, relative: str) -> Path:
    path = folder(data_dir) / relative
    if not path.is_file():
        raise DataError(f"{path}: missing (an offline LLM set; layout in ../shared/data/llm/README.md)")
    return path


def _set_file(data_dir, relative: str) -> Path:
    """A file of the data folder's other sets (``samsum/``, ``xsum/``, ``tweetqa/``: beside ``llm/``, not in it)."""
    llm = folder(data_dir)
    for root in (llm.parent, llm):
        if (root / relative).is_file():
            return root / relative
    raise DataError(f"{llm.parent / relative}: missing (a set of the data folder; layout in ../shared/data/README.md)")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read it ({exc})") from exc


def _jsonl(path: Path) -> list[dict]:
    rows = [row for _, row in json_lines(_text(path), path)]
    if not rows:
        raise DataError(f"{path}: has no rows")
    return rows


def _field(row: dict, key: str, kind: type, path: Path, number: int):
    value = row.get(key)
    if not isinstance(value, kind):
        raise DataError(f"{path} line {number}: field {key!r} missing or not a {kind.__name__}")
    return value


def _split(rows: list[dict]) -> datasets.DatasetDict:
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def _ai2_rows(path: Path, question_key: str) -> list[dict]:
    """AI2 layout {id, question {stem, choices [{text, label}]}, answerKey} → the hub layout
    {id, <question_key>, choices {text, label}, answerKey}."""
    rows = []
    for number, row in enumerate(_jsonl(path), start=1):
        question = _field(row, "question", dict, path, number)
        choices = _field(question, "choices", list, path, number)
        labels = [str(c.get("label")) for c in choices if isinstance(c, dict)]
        key = str(row.get("answerKey", "")).strip()
        if len(labels) != len(choices) or len(labels) < 2 or key not in labels:
            raise DataError(f"{path} line {number}: needs two or more choices {{text, label}} and an answerKey "
                            f"among their labels (got {key!r}, labels {labels})")
        rows.append({"id": str(row.get("id", number)), question_key: _field(question, "stem", str, path, number),
                     "choices": {"text": [str(c.get("text", "")) for c in choices], "label": labels},
                     "answerKey": key})
    return rows


def arc_challenge(data_dir=None, **_) -> datasets.DatasetDict:
    """ARC-Challenge test (AI2 layout; the copy lacks the 22 items keyed 1-4)."""
    return _split(_ai2_rows(_file(data_dir, "arc/ARC-Challenge-Test.subset.jsonl"), "question"))


def arc_easy(data_dir=None, **_) -> datasets.DatasetDict:
    """ARC-Easy dev from the derived CSV (question, A-D, answer; no header). Rows keyed 1-4 lost
    their options and are dropped, as are empty options (3-choice items)."""
    path = _file(data_dir, "arc/llmcbench/arc_easy_test.csv")
    rows = []
    with open(path, newline="", encoding="utf-8") as handle:
        for number, cells in enumerate(csv.reader(handle), start=1):
            if len(cells) != 6:
                raise DataError(f"{path} line {number}: expected 6 columns (question, A, B, C, D, answer), "
                                f"got {len(cells)}")
            options = [(LETTERS[i], text) for i, text in enumerate(cells[1:5]) if text.strip()]
            key = cells[5].strip()
            if key.isdigit() and not options:  # an NYSED item whose option texts were lost (README)
                continue
            labels = [label for label, _ in options]
            if key not in labels:
                raise DataError(f"{path} line {number}: answer {key!r} is not one of its options {labels}")
            rows.append({"id": f"arc-easy-dev-{number}", "question": cells[0],
                         "choices": {"text": [t for _, t in options], "label": labels}, "answerKey": key})
    if not rows:
        raise DataError(f"{path}: has no usable rows")
    return _split(rows)


def openbookqa(data_dir=None, **_) -> datasets.DatasetDict:
    """OpenBookQA main test (AI2 layout)."""
    return _split(_ai2_rows(_file(data_dir, "openbookqa/Main/test.jsonl"), "question_stem"))


def piqa(data_dir=None, **_) -> datasets.DatasetDict:
    """PIQA validation with its labels merged ({goal, sol1, sol2, label})."""
    path = _file(data_dir, "piqa/valid_labeled.jsonl")
    rows = []
    for number, row in enumerate(_jsonl(path), start=1):
        label = row.get("label")
        if label not in (0, 1):
            raise DataError(f"{path} line {number}: label must be 0 or 1, got {label!r}")
        rows.append({"goal": _field(row, "goal", str, path, number), "sol1": _field(row, "sol1", str, path, number),
                     "sol2": _field(row, "sol2", str, path, number), "label": label})
    return _split(rows)


def winogrande(data_dir=None, **_) -> datasets.DatasetDict:
    """WinoGrande dev (v1.1, the xl validation split): {sentence with one _, option1, option2, answer}."""
    path = _file(data_dir, "winogrande/dev.jsonl")
    rows = []
    for number, row in enumerate(_jsonl(path), start=1):
        sentence = _field(row, "sentence", str, path, number)
        if sentence.count("_") != 1 or str(row.get("answer")) not in ("1", "2"):
            raise DataError(f"{path} line {number}: needs one _ in the sentence and answer '1' or '2'")
        rows.append({"sentence": sentence, "option1": _field(row, "option1", str, path, number),
                     "option2": _field(row, "option2", str, path, number), "answer": str(row["answer"])})
    return _split(rows)


def hellaswag(data_dir=None, **_) -> datasets.DatasetDict:
    """HellaSwag validation, derived text layout: 6 lines per item (context, label 0-3, 4 endings),
    given as lm-eval's ``process_docs`` leaves it ({query, choices, label})."""
    path = _file(data_dir, "hellaswag/hellaswag_val_full.txt")
    lines = _text(path).split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or len(lines) % 6:
        raise DataError(f"{path}: expected 6 lines per item (context, label, 4 endings); {len(lines)} lines")
    rows = []
    for start in range(0, len(lines), 6):
        context, label, *endings = lines[start:start + 6]
        if label.strip() not in ("0", "1", "2", "3") or not context.strip():
            raise DataError(f"{path} line {start + 2}: label must be 0-3 after a context line, got {label!r}")
        rows.append({"query": preprocess(context), "choices": [preprocess(e) for e in endings],
                     "label": label.strip()})
    return _split(rows)


def wikitext(data_dir=None, **_) -> datasets.DatasetDict:
    """WikiText-2 raw test as articles ({page}), the layout of lm-eval's document-level
    ``wikitext``: a new article at each top-level `` = Title = `` line (CRLF read as LF)."""
    path = _file(data_dir, "wikitext2/wiki.test.raw")
    pages: list[list[str]] = []
    for line in _text(path).replace("\r\n", "\n").splitlines(keepends=True):
        if ARTICLE_TITLE.match(line.rstrip("\n")) or not pages:
            pages.append([])
        pages[-1].append(line)
    if not pages:
        raise DataError(f"{path}: has no text")
    return _split([{"page": "".join(page)} for page in pages])



# ----- the generation suite (llm-generation) -------------------------------------------------------------
IFEVAL_NEEDS_PUNKT = ("length_constraints:number_sentences", "change_case:capital_word_frequency")


def ifeval_checkers():
    """lm-eval's IFEval module (``lm_eval.tasks.ifeval.utils``), imported without its download of NLTK's
    ``punkt_tab`` (the prompts that need it are not kept) and with ``langdetect`` seeded (it is random
    otherwise: one response could pass and then fail its language check); one ``DataError`` when
    lm-eval's ``ifeval`` extra (langdetect, immutabledict, nltk) is missing."""
    import importlib

    try:
        import langdetect
        import nltk
    except ImportError as exc:
        raise DataError(f"the IFEval checkers need lm-eval's ifeval extra ({exc.name} is missing): pip install "
                        "'forgetless[llm]' (or pip install langdetect immutabledict nltk)") from None
    langdetect.DetectorFactory.seed = 0
    download, nltk.download = nltk.download, lambda *_, **__: False
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # lm-eval prints "Downloaded punkt_tab" whatever happened
            return importlib.import_module("lm_eval.tasks.ifeval.utils")
    except ImportError as exc:
        raise DataError(f"the IFEval checkers need lm-eval's ifeval extra ({exc.name} is missing): pip install "
                        "'forgetless[llm]'") from None
    finally:
        nltk.download = download


def ifeval(data_dir=None, **_) -> datasets.DatasetDict:
    """IFEval's prompts ({key, prompt, instruction_id_list, kwargs}, the hub layout), less those whose
    checkers need NLTK's punkt_tab model (module docstring); every instruction one lm-eval checks."""
    registry = ifeval_checkers().instructions_registry.INSTRUCTION_DICT
    path = _file(data_dir, "ifeval/input_data.jsonl")
    rows = []
    for number, row in enumerate(_jsonl(path), start=1):
        prompt = _field(row, "prompt", str, path, number)
        ids, kwargs = _field(row, "instruction_id_list", list, path, number), _field(row, "kwargs", list, path, number)
        if not prompt.strip() or not ids or len(ids) != len(kwargs) or not all(isinstance(k, dict) for k in kwargs):
            raise DataError(f"{path} line {number}: needs a non-empty prompt and one kwargs object per instruction")
        unknown = [i for i in ids if i not in registry]
        if unknown:
            raise DataError(f"{path} line {number}: instruction {unknown[0]!r} is not one lm-eval's IFEval checks")
        if not set(ids) & set(IFEVAL_NEEDS_PUNKT):
            rows.append({"key": _field(row, "key", int, path, number), "prompt": prompt, "instruction_id_list": ids,
                         "kwargs": [json.dumps(k, sort_keys=True) for k in kwargs]})
    if not rows:
        raise DataError(f"{path}: every prompt has an instruction whose checker needs NLTK's punkt_tab model "
                        f"({', '.join(IFEVAL_NEEDS_PUNKT)}); none is left to score offline")
    return _split(rows)


def ifeval_results(doc, results):
    """lm-eval's IFEval scoring of one response (``utils.process_results``), its instruction parameters
    read back from the JSON this reader keeps them in (an Arrow column cannot hold dicts of varying keys)."""
    return ifeval_checkers().process_results({**doc, "kwargs": [json.loads(k) for k in doc["kwargs"]]}, results)


def ifeval_instruction_accuracy(items):
    """lm-eval's instruction-level aggregation: the share of all instructions followed."""
    return ifeval_checkers().agg_inst_level_acc(items)


def gsm8k(data_dir=None, **_) -> datasets.DatasetDict:
    """GSM8K test ({question, answer}): the answer's worked solution ends in ``#### N``."""
    path = _file(data_dir, "gsm8k/test.jsonl")
    rows = []
    for number, row in enumerate(_jsonl(path), start=1):
        question, answer = _field(row, "question", str, path, number), _field(row, "answer", str, path, number)
        if not question.strip() or "#### " not in answer or not answer.split("#### ")[-1].strip():
            raise DataError(f"{path} line {number}: needs a question and an answer ending in '#### N'")
        rows.append({"question": question, "answer": answer})
    return _split(rows)


def _summaries(data_dir, relative: str, text_key: str, summary_key: str) -> datasets.DatasetDict:
    """{text, summary} of a JSON-lines summarisation file; an empty text or summary is one error."""
    path = _set_file(data_dir, relative)
    rows = []
    for number, row in enumerate(_jsonl(path), start=1):
        text, summary = _field(row, text_key, str, path, number), _field(row, summary_key, str, path, number)
        if not text.strip() or not summary.strip():
            raise DataError(f"{path} line {number}: field {text_key!r} or {summary_key!r} is empty")
        rows.append({"text": text.replace("\r\n", "\n"), "summary": summary})
    return _split(rows)


def samsum(data_dir=None, **_) -> datasets.DatasetDict:
    """SAMSum validation (dialogue, reference summary) from the data folder (``../shared/data/samsum``)."""
    return _summaries(data_dir, "samsum/validation_context_response.jsonl", "context", "response")


def xsum(data_dir=None, **_) -> datasets.DatasetDict:
    """The XSum test sample (article, one-sentence summary) from the data folder (``../shared/data/xsum``)."""
    return _summaries(data_dir, "xsum/test_1000_llm_decoding.jsonl", "document", "summary")


def summary_results(doc, results):
    """ROUGE-L F-measure (``rouge-score``, Porter stemming) of the answer against the reference summary."""
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return {"rougeL": scorer.score(doc["summary"], results[0].strip())["rougeL"].fmeasure}


def tweetqa(data_dir=None, **_) -> datasets.DatasetDict:
    """TweetQA dev ({tweet, question, answers}); the test split has no answers."""
    path = _set_file(data_dir, "tweetqa/dev.json")
    try:
        records = json.loads(_text(path))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc.msg})") from exc
    if not isinstance(records, list) or not records:
        raise DataError(f"{path}: expected a non-empty JSON list of {{Tweet, Question, Answer}} records")
    rows = []
    for number, row in enumerate(records, start=1):
        answers = row.get("Answer") if isinstance(row, dict) else None
        if not isinstance(answers, list) or not [a for a in answers if isinstance(a, str) and a.strip()]:
            raise DataError(f"{path} record {number}: needs an Answer list with a non-empty answer")
        rows.append({"tweet": _field(row, "Tweet", str, path, number), "question": _field(row, "Question", str, path,
                                                                                        number),
                     "answers": [a for a in answers if isinstance(a, str) and a.strip()]})
    return _split(rows)


def tweetqa_results(doc, results):
    """lm-eval's SQuAD-style exact match and token F1 (TyDiQA's English), the best over the references."""
    from lm_eval.tasks.tydiqa.utils import process_results_en

    return process_results_en(doc, results)


# ----- passkey retrieval (Mohtashami & Jaggi 2023): a key hidden at a depth of a long filler ---------------
PASSKEY_INTRO = ("There is an important piece of information hidden inside a lot of irrelevant text. Find it and "
                 "memorize it. I will quiz you about it.\n")
PASSKEY_FILLER = ("The grass is green.", "The sky is blue.", "The sun is yellow.", "Here we go.",
                  "There and back again.")
PASSKEY_QUESTION = "\nWhat is the pass key? The pass key is"
PASSKEY_ITEMS = 20  # prompts per length: depths 0, 1/19, ..., 1 of the filler
PIECES = re.compile(r"\d|[^\W\d]+|[^\w\s]")


def pieces(text: str) -> int:
    """Words, digits and punctuation marks: the token count of the passkey texts in the usual tokenizers,
    whose vocabularies hold every filler word whole (and many split numbers into digits)."""
    return len(PIECES.findall(text))


def passkey_prompt(length: int, depth: float, key: str) -> str:
    """A prompt of about ``length`` tokens (``pieces``) with ``key`` stated once, after ``depth`` (0..1)
    of the filler sentences."""
    needle = f"The pass key is {key}. Remember it. {key} is the pass key."
    budget = length - pieces(PASSKEY_INTRO) - pieces(needle) - pieces(PASSKEY_QUESTION)
    if budget < pieces(" ".join(PASSKEY_FILLER)):
        raise DataError(f"passkey length {length}: too short for the instructions, the key and one round of filler "
                        f"(at least {length - budget + pieces(' '.join(PASSKEY_FILLER))} tokens)")
    sentences, count = [], 0
    while count + pieces(PASSKEY_FILLER[len(sentences) % len(PASSKEY_FILLER)]) <= budget:
        sentence = PASSKEY_FILLER[len(sentences) % len(PASSKEY_FILLER)]
        sentences.append(sentence)
        count += pieces(sentence)
    at = round(depth * len(sentences))
    return PASSKEY_INTRO + " ".join(sentences[:at] + [needle] + sentences[at:]) + PASSKEY_QUESTION


def passkey(length=None, items: int = PASSKEY_ITEMS, **_) -> datasets.DatasetDict:
    """``items`` prompts of about ``length`` tokens ({prompt, key, depth, length}): a seeded 5-digit key
    per prompt (the same for every run), at depths spread evenly from the start to the end of the filler."""
    if not isinstance(length, int) or isinstance(length, bool) or length < 1:
        raise DataError(f"passkey: dataset_kwargs length must be a positive number of tokens, got {length!r}")
    rng = random.Random(f"passkey-{length}")
    rows = []
    for index in range(items):
        depth = index / (items - 1) if items > 1 else 0.5
        key = str(rng.randrange(10_000, 100_000))
        rows.append({"prompt": passkey_prompt(length, depth, key), "key": key, "depth": depth, "length": length})
    return _split(rows)


def passkey_results(doc, results):
    """1 when the first number of the answer is the key, else 0."""
    found = re.search(r"\d+", results[0])
    return {"acc": float(found is not None and found.group() == doc["key"])}
