"""Read local TSV / CSV / JSON / JSONL tables into ``ExampleSet`` objects with a column mapping.

Every problem (unreadable file, missing column, unknown label, empty file) is one ``DataError``
that names the file.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from ..errors import DataError
from .task import ExampleSet, labels_from_names

csv.field_size_limit(10**8)


def read_table(path: str | Path, delimiter: str | None = None, quoting: int = csv.QUOTE_MINIMAL,
               fieldnames: list[str] | None = None) -> list[dict]:
    """Rows of a ``.tsv``/``.csv``/``.json``/``.jsonl`` file as dicts."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with path.open(encoding="utf-8") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
        elif suffix == ".json":
            rows = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(rows, list):
                raise DataError(f"{path}: expected a JSON list of records")
        elif suffix in (".tsv", ".csv", ".txt"):
            sep = delimiter or ("," if suffix == ".csv" else "\t")
            with path.open(encoding="utf-8", newline="") as handle:
                rows = list(csv.DictReader(handle, delimiter=sep, quoting=quoting, fieldnames=fieldnames))
        else:
            raise DataError(f"{path}: unsupported file type {suffix!r} (use .tsv, .csv, .json or .jsonl)")
    except (UnicodeDecodeError, json.JSONDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: unreadable ({exc})") from exc
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def require_columns(rows: list[dict], columns: list[str], where: str) -> None:
    have = set(rows[0])
    missing = [c for c in columns if c and c not in have]
    if missing:
        raise DataError(f"{where}: missing column(s) {missing}; columns present: {sorted(have)}")


def example_set_from_rows(rows: list[dict], name: str, where: str, text_a: str, label: str,
                          label_names: list[str], text_b: str | None = None, hard: str | None = None,
                          group: str | None = None, aliases: dict[str, str] | None = None) -> ExampleSet:
    """Build an ``ExampleSet`` from dict rows using the named columns."""
    require_columns(rows, [text_a, label, text_b, hard, group], where)
    labels = labels_from_names([r[label] for r in rows], label_names, where, aliases)
    return ExampleSet(
        name=name,
        text_a=[str(r[text_a]) for r in rows],
        text_b=[str(r[text_b]) for r in rows] if text_b else None,
        labels=labels,
        label_names=label_names,
        hard=[str(r[hard]).strip().lower() in ("1", "true", "hard", "yes") for r in rows] if hard else None,
        groups=[str(r[group]) for r in rows] if group else None,
        source=where,
    )


def read_example_set(path: str | Path, name: str, text_a: str, label: str, label_names: list[str],
                     text_b: str | None = None, hard: str | None = None, group: str | None = None) -> ExampleSet:
    """One local file → ``ExampleSet``."""
    return example_set_from_rows(read_table(path), name, str(path), text_a, label, label_names, text_b, hard, group)
