"""Per-example predictions beside a report card, so that every figure on it can be recomputed.

Format: JSON Lines (one object per line, UTF-8), written atomically. Each row has

    id           example id (string or int), unique within (set, role)
    set          set name ("dev", "challenge", "hans", ...)
    role         "base" or "compressed"
    gold         gold label (name or index, as the task defines it)
    predicted    predicted label (same kind as gold)
    probabilities  list of class probabilities, or null (generation tasks)
    group        group name (HANS heuristic, template ...) or null
    hard         true / false (ground-truth hard example) or null when the task has no such labels
    generated    the generated text (seq2seq models; for generation tasks ``predicted`` is that text
                 and ``gold`` the list of references; an LLM generation task's answer, ``predicted``
                 its first metric's value); absent for classifiers
    text         the input: the example's text (classification) or source (generation)
    text_pair    the second text of a pair task; absent for single texts
    log_likelihoods  an LLM suite's item: each choice's log-likelihood (lm-eval's); a rolling document:
                 its log-likelihood
    choice_lengths   the choices' lengths in characters (lm-eval's acc_norm divides by them)
    words, bytes     a rolling document's word and byte counts (lm-eval's word / byte perplexity)

For an LLM suite (``set`` = the lm-eval task) ``gold`` and ``predicted`` are choice indices (the
prediction under the task's metric: acc_norm where it has it); ``probabilities`` the softmax of the
scores that metric compares (acc: the log-likelihoods; acc_norm: the log-likelihoods per character), so
``predicted`` is the most probable choice.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from ..errors import DataError
from ..fsutil import atomic_write_text, json_lines

REQUIRED = ("id", "set", "role", "gold", "predicted")
OPTIONAL = ("probabilities", "group", "hard", "generated", "text", "text_pair", "log_likelihoods", "choice_lengths",
            "words", "bytes")
ROLES = ("base", "compressed")


def _normalise(row: dict, where: str) -> dict:
    missing = [key for key in REQUIRED if key not in row]
    if missing:
        raise DataError(f"{where}: prediction row lacks {', '.join(missing)}; required: {', '.join(REQUIRED)}")
    unknown = sorted(set(row) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise DataError(f"{where}: unknown prediction field(s) {', '.join(unknown)}; "
                        f"valid: {', '.join(REQUIRED + OPTIONAL)}")
    if row["role"] not in ROLES:
        raise DataError(f"{where}: role {row['role']!r} is not one of {', '.join(ROLES)}")
    if row.get("hard") not in (None, True, False):
        raise DataError(f"{where}: hard must be true, false or null, got {row['hard']!r}")
    probabilities = row.get("probabilities")
    if probabilities is not None:
        probabilities = [float(p) for p in probabilities]
    out = {**{key: row[key] for key in REQUIRED}, "probabilities": probabilities,
           "group": row.get("group"), "hard": row.get("hard")}
    for key in ("generated", "text", "text_pair"):
        if row.get(key) is not None:
            out[key] = str(row[key])
    for key, kind in (("log_likelihoods", float), ("choice_lengths", int)):
        if row.get(key) is not None:
            out[key] = [kind(v) for v in row[key]]
    for key in ("words", "bytes"):
        if row.get(key) is not None:
            out[key] = int(row[key])
    return out


def write_predictions(path: str | Path, rows: Iterable[dict]) -> Path:
    """Write ``rows`` (dicts with the fields above) as JSON Lines to ``path`` atomically."""
    path = Path(path)
    seen: set = set()
    lines = []
    for number, row in enumerate(rows, start=1):
        row = _normalise(row, f"{path} row {number}")
        key = (row["set"], row["role"], row["id"])
        if key in seen:
            raise DataError(f"{path} row {number}: duplicate id {row['id']!r} for set {row['set']!r}, role {row['role']!r}")
        seen.add(key)
        lines.append(json.dumps(row, ensure_ascii=False))
    atomic_write_text(path, "".join(line + "\n" for line in lines))
    return path


def read_predictions(path: str | Path) -> list[dict]:
    """Rows written by ``write_predictions``; a malformed line is a ``DataError`` naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"{path}: cannot read predictions ({exc})") from exc
    return [_normalise(row, f"{path} line {number}") for number, row in json_lines(text, path)]


def recompute_accuracy(rows: Iterable[dict], set: str, role: str, hard: bool | None = None,
                       group: str | None = None) -> dict:
    """``{"accuracy", "n"}`` of ``role`` on ``set`` from per-example rows, optionally restricted to
    hard (``hard=True``) / easy (``hard=False``) examples or to one ``group``. ``accuracy`` is None
    when no row matches."""
    if role not in ROLES:
        raise DataError(f"role {role!r} is not one of {', '.join(ROLES)}")
    selected = [row for row in rows if row["set"] == set and row["role"] == role
                and (hard is None or row.get("hard") is hard) and (group is None or row.get("group") == group)]
    if not selected:
        return {"accuracy": None, "n": 0}
    correct = sum(row["predicted"] == row["gold"] for row in selected)
    return {"accuracy": correct / len(selected), "n": len(selected)}
