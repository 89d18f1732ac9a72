"""``forgetless report OUT``: re-render a run's card (``metrics.png``, ``report.md``,
``report.html``) from its ``report.json`` and ``predictions.jsonl`` without loading any model,
e.g. after an upgrade of forgetless changed the pages. Everything is read and checked before
anything is written; the files are written atomically and only inside OUT.

``read_card`` is the one reader of a saved card (also used by ``forgetless compare``).
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from ..errors import DataError, OutputFolderError
from ..fsutil import atomic_write_json
from ..outputs import output_lock
from .card import render_card
from ..data.task_kinds import task_kind
from .card_types import Card
from .predictions import read_predictions, recompute_accuracy

MAX_CARD_BYTES = 50_000_000
MAX_CARD_DEPTH = 64  # objects and lists within each other (a card written by forgetless: about 8)


def read_card(folder, flag: str = "OUT") -> Card:
    """The ``Card`` of a run folder's ``report.json`` (the one JSON reader of a saved card); a missing folder
    or file, a file that is not JSON or not a card is one ``ForgetlessError`` naming it."""
    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise OutputFolderError(f"{flag} {folder}: {what}; give the output folder of a `forgetless compress` run")
    path = folder / "report.json"
    if not path.is_file():
        raise DataError(f"{flag} {folder}: has no report.json; give the output folder of a finished "
                        "`forgetless compress` run")
    if path.stat().st_size > MAX_CARD_BYTES:
        raise DataError(f"{flag} {path}: is {path.stat().st_size:,} bytes, larger than any report card")
    card = _parsed(path, flag)
    if not isinstance(card, dict):
        raise DataError(f"{flag} {path}: is not a report card (a JSON object)")
    deepest = _depth(card)
    if deepest > MAX_CARD_DEPTH:
        raise DataError(f"{flag} {path}: is nested {deepest} levels deep; a report card is at most {MAX_CARD_DEPTH}")
    try:
        return Card.from_json(card)  # the schema of report/card_types.py
    except ValueError as exc:
        raise DataError(f"{flag} {path}: is not a valid report card ({exc})") from exc


def _parsed(path: Path, flag: str):
    """The JSON value of ``path``; a ``DataError`` naming the line and column where it stops being JSON
    (or that it nests deeper than Python's reader goes)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{flag} {path}: is not readable JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") \
            from None
    except RecursionError:
        raise DataError(f"{flag} {path}: is not a report card (JSON nested thousands of levels deep; a report card "
                        f"is at most {MAX_CARD_DEPTH})") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataError(f"{flag} {path}: is not readable JSON ({exc})") from exc


def _depth(value) -> int:
    """How many objects and lists ``value`` holds within each other (without recursion: any depth)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def check_predictions(card: Card, folder: Path, flag: str = "OUT") -> None:
    """``predictions.jsonl`` (when the card names it) exists, parses, and gives back every accuracy
    of the card (classification); else one ``DataError`` naming the first mismatch."""
    name = card.predictions
    if not name:
        return
    path = folder / name
    if "/" in name or not path.is_file():
        raise DataError(f"{flag} {folder}: report.json names {name}, which is missing")
    rows = read_predictions(path)
    if task_kind(card.kind.task).pairs:  # generated texts: no accuracy to recompute (an LLM suite: each task's)
        return
    for set_name, entry in card.sets.items():
        for role in ("base", "compressed"):
            metrics = getattr(entry, role)
            again = recompute_accuracy(rows, set_name, role)
            expected = metrics.get("accuracy")
            if again["n"] != metrics["n"] or (expected is not None and again["accuracy"] is not None
                                              and not math.isclose(again["accuracy"], expected, abs_tol=1e-9)):
                raise DataError(f"{flag} {path}: does not match report.json ({set_name} / {role}: "
                                f"{again['accuracy']} on {again['n']} rows, the card says {expected} on "
                                f"{metrics['n']})")


def rerender(folder, flag: str = "OUT") -> dict[str, Path]:
    """Re-render the pages of the run in ``folder``; returns the written paths. A method plot the
    card lists but the folder lacks is left out (with a note on stderr): it needs the model."""
    folder = Path(folder)
    card = read_card(folder, flag)
    check_predictions(card, folder, flag)
    extra = []
    for name in (card.plots or [])[1:]:
        if "/" not in name and (folder / name).is_file():
            extra.append(folder / name)
        else:
            print(f"[forgetless] note: {name} is missing in {folder}; the pages go without it", file=sys.stderr)
    with output_lock(folder, flag):  # a compress still writing into the folder stops this one
        rendered, paths = render_card(card, folder, extra)
        if rendered.plots != (card.plots or []):
            atomic_write_json(folder / "report.json", rendered.to_json())
    return paths
