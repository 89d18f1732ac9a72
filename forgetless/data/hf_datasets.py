"""Read 🤗 ``datasets`` objects (a ``Dataset`` per split, or a ``DatasetDict``) into the columns a
``Task`` holds (``Task.from_datasets``). Duck-typed (``column_names``, ``features``, column access),
so importing it does not import the ``datasets`` library.

Splits of a ``DatasetDict`` (or a plain dict of datasets): ``train`` trains, ``validation`` (else
``dev``, else ``test``) is the dev set, every other split is an extra evaluation (challenge) set.
Columns: classification reads ``text`` (+ ``text_pair``) and ``label``; generation reads ``text``
(the source) and ``target``. Left out, they are inferred: a ``label`` column with the first of
``TEXT_COLUMNS`` (+ the first of ``PAIR_COLUMNS``) → classification; ``source`` and ``target`` →
generation. Label names come from a ``ClassLabel`` feature, else ``labels=[...]``, else the sorted
distinct string labels; integer labels without names and unlabelled rows (-1) are errors.
"""
from __future__ import annotations

from ..errors import DataError

TEXT_COLUMNS = ("text", "sentence", "sentence1", "premise", "question", "claim")
PAIR_COLUMNS = ("sentence2", "hypothesis", "evidence")
DEV_SPLITS = ("validation", "dev", "test")


def is_dataset(obj) -> bool:
    return all(hasattr(obj, attr) for attr in ("column_names", "features", "__getitem__", "__len__"))


def splits_of(data, what: str = "data") -> tuple:
    """``(train, dev, {name: extra set})`` of a ``DatasetDict`` or a dict of datasets."""
    if not isinstance(data, dict) or not all(is_dataset(v) for v in data.values()):
        raise DataError(f"{what}: expected a datasets.DatasetDict or a dict of datasets.Dataset, "
                        f"got {type(data).__name__}")
    dev_name = next((s for s in DEV_SPLITS if s in data), None)
    if "train" not in data or dev_name is None:
        raise DataError(f"{what}: needs a 'train' split and a 'validation' (or 'dev' / 'test') split; "
                        f"it has {', '.join(data) or 'none'}")
    extra = {name: ds for name, ds in data.items() if name not in ("train", dev_name)}
    return data["train"], data[dev_name], extra


def text_columns(columns, text: str | None, text_pair: str | None) -> tuple[str | None, str | None]:
    """The text columns of a dataset or local file: given names win, else the first of ``TEXT_COLUMNS``
    and, after a pair's first text (sentence1, premise, claim), the first of ``PAIR_COLUMNS``."""
    text = text or next((c for c in TEXT_COLUMNS if c in columns), None)
    if text_pair is None and text in ("sentence1", "premise", "claim"):
        text_pair = next((c for c in PAIR_COLUMNS if c in columns), None)
    return text, text_pair


def infer_columns(ds, text, text_pair, label, target) -> dict:
    """The columns to read: ``{task_type, text, text_pair, label, target}``; given names win."""
    columns = list(ds.column_names)
    if target is not None or (label is None and "label" not in columns and {"source", "target"} <= set(columns)):
        return {"task_type": "generation", "text": text or "source", "text_pair": None, "label": None,
                "target": target or "target"}
    text, text_pair = text_columns(columns, text, text_pair)
    if text is None:
        raise DataError(f"no text column among {columns}; name it: text=..., label=... (classification) or "
                        "text=..., target=... (generation)")
    return {"task_type": "classification", "text": text, "text_pair": text_pair, "label": label or "label",
            "target": None}


def column(ds, name: str, where: str) -> list:
    if name not in ds.column_names:
        raise DataError(f"{where}: no column {name!r}; it has {', '.join(ds.column_names)}")
    return list(ds[name])


def texts(ds, name: str, where: str) -> list[str]:
    values = column(ds, name, where)
    bad = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
    if bad is not None:
        raise DataError(f"{where}: column {name!r} row {bad + 1} is a {type(values[bad]).__name__}, not text")
    return values


def label_names(train, label: str, given: list[str] | None, where: str = "train") -> list[str]:
    """From a ``ClassLabel`` feature, else ``given``, else the sorted distinct string labels."""
    feature = train.features.get(label) if label in train.column_names else None
    names = getattr(feature, "names", None)
    if names:
        return [str(n) for n in names]
    if given:
        return [str(n) for n in given]
    values = column(train, label, where)
    if not all(isinstance(v, str) for v in values):
        raise DataError(f"{where}: column {label!r} holds label ids without names (no ClassLabel feature); "
                        "pass labels=[name of id 0, name of id 1, ...]")
    return sorted(set(values))


def label_ids(ds, label: str, names: list[str], where: str) -> list[int]:
    """Label ids in ``names`` order: ids are kept (checked), strings are looked up."""
    feature = ds.features.get(label) if label in ds.column_names else None
    own = getattr(feature, "names", None)
    index = {name: i for i, name in enumerate(names)}
    ids = []
    for row, value in enumerate(column(ds, label, where)):
        if own and isinstance(value, int) and 0 <= value < len(own):
            value = own[value]  # a ClassLabel id of this split: its own name, mapped onto the task's names
        if isinstance(value, str) and value in index:
            ids.append(index[value])
        elif isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
            ids.append(value)
        else:
            what = "is unlabelled (-1)" if value == -1 else f"has the label {value!r}"
            raise DataError(f"{where}: row {row + 1} {what}; expected one of {names}")
    return ids
