"""Read local TSV / CSV / JSON / JSONL tables into ``ExampleSet`` objects with a column mapping.

Every problem (unreadable file, missing column, unknown label, empty file) is one ``DataError``
that names the file.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from ..errors import DataError
from .hf_datasets import text_columns
from .task import ExampleSet, check_table_names, labels_from_names

csv.field_size_limit(10**8)


def split_json_key(path: str | Path, json_key: str | None = None) -> tuple[Path, str | None]:
    """``file.json:key`` → (``file.json``, ``key``): the records are the list under ``key`` (e.g.
    AdvGLUE's ``{"sst2": [...]}``); ``json_key`` (``--json-key``) applies to every JSON file."""
    text = str(path)
    head, sep, key = text.rpartition(":")
    if sep and head.lower().endswith(".json") and not Path(text).is_file():
        return Path(head), key
    return Path(text), json_key


def read_table(path: str | Path, delimiter: str | None = None, quoting: int = csv.QUOTE_MINIMAL,
               fieldnames: list[str] | None = None, json_key: str | None = None) -> list[dict]:
    """Rows of a ``.tsv``/``.csv``/``.json``/``.jsonl`` file as dicts (a JSON file holds a list of
    records, or an object whose ``json_key`` — also written ``file.json:key`` — holds it)."""
    path, json_key = split_json_key(path, json_key)
    if not path.is_file():
        raise DataError(f"{path}: file not found")
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with path.open(encoding="utf-8-sig") as handle:
                rows = [json.loads(line) for line in handle if line.strip()]
        elif suffix == ".json":
            rows = json.loads(path.read_text(encoding="utf-8-sig"))
            if json_key is not None:
                if not isinstance(rows, dict) or json_key not in rows:
                    keys = sorted(rows)[:10] if isinstance(rows, dict) else "none: the file holds a list"
                    raise DataError(f"{path}: no key {json_key!r} (keys: {keys})")
                rows = rows[json_key]
            if not isinstance(rows, list):
                hint = f"; pick the list with {path}:KEY or --json-key (keys: {sorted(rows)[:10]})" \
                    if isinstance(rows, dict) else ""
                raise DataError(f"{path}: expected a JSON list of records{hint}")
        elif suffix in (".tsv", ".csv", ".txt"):
            sep = delimiter or ("," if suffix == ".csv" else "\t")
            with path.open(encoding="utf-8-sig", newline="") as handle:
                rows = list(csv.DictReader(handle, delimiter=sep, quoting=quoting, fieldnames=fieldnames))
        else:
            raise DataError(f"{path}: unsupported file type {suffix!r} (use .tsv, .csv, .json or .jsonl)")
    except (UnicodeDecodeError, json.JSONDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: unreadable ({exc})") from exc
    if not rows:
        raise DataError(f"{path}: no rows")
    for number, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise DataError(f"{path}: row {number} is a {type(row).__name__}, not a record with named fields")
    return rows


def require_columns(rows: list[dict], columns: list[str], where: str) -> None:
    """Every row has every named column (a missing key or a null value names the row)."""
    have = set(rows[0])
    missing = [c for c in columns if c and c not in have]
    if missing:
        raise DataError(f"{where}: missing column(s) {missing}; columns present: {sorted(have)}")
    for number, row in enumerate(rows, 1):
        for column in columns:
            if column and row.get(column) is None:
                problem = "has no value for" if column in row else "lacks the column"
                raise DataError(f"{where}: row {number} {problem} {column!r}")


def check_label_names(labels, option: str = "--labels") -> list[str]:
    """Label names in id order: a list (not one string, which would be split per character) of at
    least two distinct, non-empty names."""
    if isinstance(labels, str):
        raise DataError(f"{option}: give a list of label names, not the string {labels!r} "
                        f"(e.g. {labels.split(',')!r})")
    names = [str(x).strip() for x in labels]
    if len(names) < 2 or any(not n for n in names) or len(set(names)) != len(names):
        raise DataError(f"{option} {','.join(names)}: need at least two distinct, non-empty label names in id order")
    check_table_names(f"{option} {','.join(names)}", label=names)
    return names


def example_set_from_rows(rows: list[dict], name: str, where: str, text_a: str, label: str,
                          label_names: list[str], text_b: str | None = None, hard: str | None = None,
                          group: str | None = None, strip: bool = False, **extra) -> ExampleSet:
    """Build an ``ExampleSet`` from dict rows using the named columns (``strip``: strip ``text_a``;
    ``extra``, e.g. ``prediction_map``, goes to the set)."""
    require_columns(rows, [text_a, label, text_b, hard, group], where)
    labels = labels_from_names([r[label] for r in rows], label_names, where)
    return ExampleSet(
        name=name,
        text_a=[str(r[text_a]).strip() if strip else str(r[text_a]) for r in rows],
        text_b=[str(r[text_b]) for r in rows] if text_b else None,
        labels=labels,
        label_names=label_names,
        hard=[str(r[hard]).strip().lower() in ("1", "true", "hard", "yes") for r in rows] if hard else None,
        groups=[str(r[group]) for r in rows] if group else None,
        source=where,
        **extra,
    )


def infer_file_columns(path: str | Path, text_a: str | None, text_b: str | None, label: str,
                       labels: list[str] | None, json_key: str | None = None) -> tuple[str, str | None, list[str], str]:
    """The columns and label names of a local file when not given: ``hf_datasets.text_columns``
    (``text_b`` '': single texts), the label names sorted (names) or numbered (ids 0..k-1); with a
    sentence saying what was inferred."""
    rows = read_table(path, json_key=json_key)
    columns = list(rows[0])
    found_a, found_b = text_columns(columns, text_a, text_b)
    if found_a is None:
        raise DataError(f"{path}: no text column among {columns}; name it with --text-a COLUMN")
    said = [] if text_a else [f"text {found_a!r}"]
    if text_b is None:
        said.append(f"second text {found_b!r}" if found_b else "single texts")
    text_a, text_b = found_a, found_b
    if not labels:
        require_columns(rows, [label], str(path))
        values = sorted({str(r[label]).strip() for r in rows})
        if all(v.lstrip("-").isdigit() for v in values):
            labels = [str(i) for i in range(max(int(v) for v in values) + 1)]
        else:
            labels = values
        said.append(f"labels {', '.join(labels)} ({'ids' if labels == [str(i) for i in range(len(labels))] else 'sorted'}"
                    "; give --labels for names in id order)")
    return text_a, text_b or None, check_label_names(labels), "; ".join(said)
