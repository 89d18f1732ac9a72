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
"""
from __future__ import annotations

import csv
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
