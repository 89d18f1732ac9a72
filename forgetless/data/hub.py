"""Named benchmarks read from the Hugging Face hub when no data folder is given.

Every set a named task needs is one ``HubSet`` in ``SETS``: the hub dataset id, configuration and
split, and the columns that hold the texts and the label. All of them are read by one function,
``load_rows``, through ``datasets.load_dataset`` (datasets >= 3: parquet, no loading scripts), and
turned into an ``ExampleSet`` by ``example_set`` with the label names of the task; the task
modules (``glue.py``, ``mnli.py``, ``fever.py``) build the same protocol from these sets as from
the data folder. The table of ids is in the README ("Data from the hub").

Where a task's hub sets differ from its data folder, its module says (no PAWS-QQP, no MNLI hardness
flags, FEVER de-duplicated by claim id). HANS (``jhu-cogsci/hans``) and FEVER (``fever/fever``)
still hold loading scripts, which datasets >= 4 refuses to run: they are read from the hub's own
parquet export of those repos (``refs/convert/parquet``); FEVER-Symmetric, not on the hub, from
the authors' release (github.com/TalSchuster/FeverSymmetric) with datasets' json loader.

When the hub cannot be reached (``HF_HUB_OFFLINE=1`` with nothing cached, or no network) the
first set that fails stops the run with one ``DataError`` naming the dataset and ``--data-dir``.
"""
from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from urllib.parse import urlparse

from ..errors import DataError
from .files import example_set_from_rows
from .task import ExampleSet

EXPORT = "refs%2Fconvert%2Fparquet"  # the hub's parquet export branch, as hf:// paths spell it
SYMMETRIC = "https://raw.githubusercontent.com/TalSchuster/FeverSymmetric/master/"


@dataclass(frozen=True)
class HubSet:
    """One split of a hub dataset and the columns a task reads from it. ``export``: read the
    hub's parquet export of a repo that still holds a loading script; ``urls``: not on the hub,
    read with datasets' json loader from these files; ``unique``: keep the first row of each id."""

    dataset: str
    config: str | None
    split: str
    text_a: str
    text_b: str | None
    label: str = "label"
    group: str | None = None
    export: bool = False
    urls: tuple[str, ...] = ()
    unique: str | None = None
    strip: bool = False  # strip text_a, as the folder reader of the same set does (SST-2)

    def describe(self) -> str:
        where = f"{self.dataset} ({self.config}, {self.split})" if self.config else f"{self.dataset} ({self.split})"
        return where + (" from the authors' release" if self.urls else "")

    def load_args(self) -> dict:
        """The keyword arguments of the ``datasets.load_dataset`` call that reads this set."""
        if self.urls:
            return {"path": "json", "data_files": list(self.urls), "split": "train"}
        if self.export:
            files = f"hf://datasets/{self.dataset}@{EXPORT}/{self.config}/{self.split}/*.parquet"
            return {"path": "parquet", "data_files": files, "split": "train"}
        return {"path": self.dataset, "name": self.config, "split": self.split}

    def host(self) -> str:
        if self.urls:
            return urlparse(self.urls[0]).hostname or ""
        endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
        return urlparse(endpoint).hostname or "huggingface.co"


GLUE, ADVGLUE = "nyu-mll/glue", "AI-Secure/adv_glue"
GLUE_COLUMNS = {"sst2": ("sentence", None), "rte": ("sentence1", "sentence2"), "qnli": ("question", "sentence"),
                 "qqp": ("question1", "question2"), "mnli": ("premise", "hypothesis")}
_DEV_SPLIT = {"mnli": "validation_matched"}

SETS: dict[str, HubSet] = {}
for _task, (_a, _b) in GLUE_COLUMNS.items():
    SETS[f"{_task}/train"] = HubSet(GLUE, _task, "train", _a, _b, strip=_task == "sst2")
    SETS[f"{_task}/dev"] = HubSet(GLUE, _task, _DEV_SPLIT.get(_task, "validation"), _a, _b, strip=_task == "sst2")
    SETS[f"advglue/{_task}"] = HubSet(ADVGLUE, f"adv_{_task}", "validation", _a, _b)
SETS.update({
    "hans": HubSet("jhu-cogsci/hans", "plain_text", "validation", "premise", "hypothesis", group="heuristic",
                   export=True),
    "paws_wiki": HubSet("google-research-datasets/paws", "labeled_final", "validation", "sentence1", "sentence2"),
    "fever/train": HubSet("fever/fever", "v1.0", "train", "claim", None, export=True, unique="id"),
    "fever/dev": HubSet("fever/fever", "v1.0", "paper_dev", "claim", None, export=True, unique="id"),
    "fever/sym1": HubSet("FEVER-Symmetric v0.1", None, "generated", "claim", None,
                         urls=(SYMMETRIC + "symmetric_v0.1/fever_symmetric_generated.jsonl",)),
    "fever/sym2": HubSet("FEVER-Symmetric v0.2", None, "dev+test", "claim", None,
                         urls=(SYMMETRIC + "symmetric_v0.2/fever_symmetric_dev.jsonl",
                               SYMMETRIC + "symmetric_v0.2/fever_symmetric_test.jsonl")),
})

_REACHABLE: dict[str, bool] = {}


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` is set (1, on, yes or true, as huggingface_hub reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def _reachable(host: str, timeout: float = 3.0) -> bool:
    """A TCP connection to ``host``:443 opens within ``timeout`` seconds (checked once per host),
    so an unreachable hub stops the run in seconds instead of after datasets' retries."""
    if host not in _REACHABLE:
        try:
            socket.create_connection((host, 443), timeout=timeout).close()
            _REACHABLE[host] = True
        except OSError:
            _REACHABLE[host] = False
    return _REACHABLE[host]


def _unreachable(spec: HubSet, reason: str) -> DataError:
    return DataError(f"the hub dataset {spec.describe()} {reason}; offline, pass --data-dir DIR (a data folder, "
                     "see the README) or set FORGETLESS_DATA_DIR")


def load_rows(key: str) -> tuple[list[dict], str]:
    """The rows of set ``key`` of ``SETS`` and a description of where they came from."""
    spec = SETS[key]
    if not hub_offline() and not _reachable(spec.host()):
        raise _unreachable(spec, f"is needed but {spec.host()} cannot be reached "
                                 "(HF_HUB_OFFLINE=1 reads datasets' cache)")
    import datasets

    try:
        table = datasets.load_dataset(**spec.load_args())
    except (ConnectionError, OSError, ValueError, FileNotFoundError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _unreachable(spec, f"could not be loaded ({first[:200]})") from exc
    rows = [dict(r) for r in table]
    if spec.unique:
        seen: set = set()
        rows = [r for r in rows if not (r.get(spec.unique) in seen or seen.add(r.get(spec.unique)))]
    if not rows:
        raise DataError(f"{spec.describe()}: no rows")
    return rows, spec.describe()


def example_set(key: str, name: str, label_names: list[str], **extra) -> ExampleSet:
    """Set ``key`` as an ``ExampleSet`` with the task's ``label_names`` (hub labels are class ids
    in GLUE order, or label names); ``extra`` (e.g. ``prediction_map``) goes to the set."""
    spec = SETS[key]
    rows, where = load_rows(key)
    return example_set_from_rows(rows, name, where, spec.text_a, spec.label, label_names, spec.text_b,
                                 group=spec.group, strip=spec.strip, **extra)
