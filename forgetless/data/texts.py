"""Plain texts read from a file, one home for every reader of them: the perplexity text of a causal-lm
run (``--perplexity-file``) and the calibration texts of an LLM task (``--train``). A text file gives
its non-empty lines; a ``.jsonl`` file the ``document``, ``text`` or ``context`` field of each record
(the XSum and SAMSum files of the data folder), whitespace collapsed."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import DataError

TEXT_FIELDS = ("document", "text", "context")


def read_texts(path: str | Path, limit: int | None = None) -> list[str]:
    """Non-empty lines of a text file, or the text field of each record of a ``.jsonl`` file;
    the first ``limit`` of them."""
    path = Path(path)
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        texts = [_record_text(line, path) for line in lines] if path.suffix == ".jsonl" else lines
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read the text file ({exc})") from exc
    texts = [t for t in texts if t][:limit]
    if not texts:
        raise DataError(f"{path}: the text file has no text")
    return texts


def _record_text(line: str, path: Path) -> str:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: a line is not JSON ({exc})") from exc
    field = next((f for f in TEXT_FIELDS if isinstance(record, dict) and isinstance(record.get(f), str)), None)
    if field is None:
        raise DataError(f"{path}: a record has none of the text fields {', '.join(TEXT_FIELDS)}")
    return " ".join(record[field].split())
