"""An LLM evaluation suite: lm-eval tasks with the items each evaluates, and WikiText-2 perplexity as
the papers measure it; what a ``Task`` of kind ``lm-eval`` carries (``data/llm_tasks.py`` builds it).

Everything is read when the task is built, before any model is loaded: every task's YAML and
documents (``engine.load_tasks``) and the perplexity text. ``--eval-size N`` keeps a seeded sample of
N items of each task (all when N ≥ its size; ``capped``), the same for base and compressed: they are
the task's, not the model's. The perplexity text is scored in at most ``--perplexity-windows`` seeded
windows, apart from the items. ``evaluate_tasks`` runs one model on the suite's lm-eval tasks; the
causal-LM kind adds the perplexity text and the cache (``kinds/causal_lm.py``) and, with
``--until-interval``, scores base and compressed together (``kinds/stopping.py``).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import ConfigError
from . import engine, task_checks
from .answers import end_tokens
from .records import EXACT, GENERATE, MULTIPLE_CHOICE, ROLLING, SHARED, near_ties, scores, task_records, unit_values

PERPLEXITY_WINDOWS = 40  # --perplexity-windows' default: 81,920 of WikiText-2 test's 148 windows of 2048 tokens


@dataclass
class LMEvalSet:
    """One lm-eval task of a suite: ``items`` (doc ids evaluated) of its ``size`` documents."""

    name: str
    output_type: str
    size: int
    items: list[int]
    source: str  # the task's YAML file
    digest: str  # hash of its documents

    def __len__(self) -> int:
        return len(self.items)

    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.digest}:{self.items}".encode()).hexdigest()[:16]


@dataclass
class PerplexitySet:
    """A text scored in non-overlapping windows (``metrics/perplexity.py``); ``cap`` windows at most.
    Its length is its number of rows (lines of the file)."""

    name: str
    source: str
    text: str
    rows: int
    window: int | None = None  # None: the model's context capped at 2048
    cap: int | None = None
    seed: int = 0

    def __len__(self) -> int:
        return self.rows

    def fingerprint(self) -> str:
        return hashlib.sha256(f"{self.text}\n{self.window}:{self.cap}:{self.seed}".encode()).hexdigest()[:16]


@dataclass
class LMEvalSuite:
    """lm-eval ``tasks`` (loaded objects) with their ``sets``, and an optional ``perplexity`` text."""

    tasks: dict
    sets: dict[str, LMEvalSet]
    perplexity: PerplexitySet | None = None
    window: int | None = None
    describe: dict = field(default_factory=dict)
    scoring: str = SHARED  # who computes the log-likelihoods (llm/lm.py): SHARED or EXACT (--exact-lm-eval)
    until_interval: float | None = None  # --until-interval: points (kinds/stopping.py)
    seed: int = 0  # of the items' order under --until-interval
    manager: object = field(default=None, repr=False, compare=False)  # the lm-eval TaskManager of the tasks
    divergence: object = None  # --divergence-prompts: the prompts the base answers (llm/answers.PromptSet)

    def eval_sets(self) -> dict:
        return {**self.sets, **({self.perplexity.name: self.perplexity} if self.perplexity else {})}

    def capped(self, size: int | None, seed: int) -> "LMEvalSuite":
        """The same suite with a seeded sample of ``size`` items per task (None: all; sorted doc ids; a
        task's own stream of the seed, so adding a task does not change another's items), its items
        checked (``task_checks.check_items``)."""
        sets = {}
        for name, s in self.sets.items():
            items = s.items if size is None else list(range(s.size))
            if size is not None and size < s.size:
                rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
                items = sorted(rng.choice(s.size, size=size, replace=False).tolist())
            sets[name] = dataclasses.replace(s, items=items)
            if s.output_type == MULTIPLE_CHOICE:
                task_checks.check_items(name, s.source, self.tasks[name], items)
            elif s.output_type == GENERATE:
                task_checks.check_generation_items(name, s.source, self.tasks[name], items)
        return dataclasses.replace(self, sets=sets)

    def restricted(self, items: dict[str, list[int]], perplexity: bool) -> "LMEvalSuite":
        """The suite on ``items`` of the tasks named there only (and the perplexity text or not), scored
        as it is (a part of a stopped run does not stop)."""
        return dataclasses.replace(self, tasks={n: self.tasks[n] for n in items}, until_interval=None,
                                   sets={n: dataclasses.replace(self.sets[n], items=sorted(i)) for n, i in items.items()},
                                   perplexity=self.perplexity if perplexity else None)


def build_suite(names: list[str], include, data_dir, defaults: bool | None, perplexity_file: Path | None,
                window: int | None, *, perplexity_windows: int | None = None, seed: int = 0, exact: bool = False,
                until_interval: float | None = None) -> LMEvalSuite:
    """Load ``names`` (``engine.load_tasks``) from ``include`` (and lm-eval's own tasks with
    ``defaults``; None: when a name is not in ``include``), every item; read the perplexity file
    (WikiText-2 test, CRLF read as LF, its rows joined as the papers' scripts join them), to be scored
    in at most ``perplexity_windows`` windows (seeded; default ``PERPLEXITY_WINDOWS``; 0: none). ``exact``:
    lm-eval's own scoring."""
    manager, tasks = task_checks.load_checked(names, include, data_dir, defaults)  # what forgetless cannot score: refused
    sets = {}
    for name, task in tasks.items():
        docs = task.eval_docs
        sets[name] = LMEvalSet(name, task.OUTPUT_TYPE, len(docs), list(range(len(docs))),
                               engine.yaml_path(manager, name), _digest(docs, task))
    ppl = None
    if perplexity_file is not None and perplexity_windows != 0:  # 0: no perplexity asked for
        rows = Path(perplexity_file).read_text(encoding="utf-8").replace("\r\n", "\n").splitlines(keepends=True)
        ppl = PerplexitySet("wikitext2", str(perplexity_file), "\n\n".join(rows), len(rows), window,
                            perplexity_windows or PERPLEXITY_WINDOWS, seed)
    import lm_eval

    scoring = EXACT if exact else SHARED
    describe = {"engine": "lm-evaluation-harness", "version": getattr(lm_eval, "__version__", None),
                "include": [str(p) for p in include] if isinstance(include, list) else str(include), "shots": 0,
                "chat_template": False, "window": window, "scoring": scoring}
    return LMEvalSuite(tasks, sets, ppl, window, describe, scoring, until_interval, seed, manager)


def _digest(docs, task=None) -> str:
    """A content hash of a task's documents (its Arrow table; a list: its JSON) and of ``task``'s settings
    (lm-eval's ``TaskConfig.to_dict``: templates, generation kwargs, metrics, its functions' source), so
    an edited YAML is not answered from the cache."""
    digest = hashlib.sha256()
    if task is not None:
        digest.update(json.dumps(task.config.to_dict(), sort_keys=True, default=_named).encode())
    if getattr(docs, "_indices", None) is not None:  # a filtered / selected view: hash what it shows
        docs = docs.flatten_indices()
    table = getattr(getattr(docs, "data", None), "table", None)
    if table is not None:
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        digest.update(sink.getvalue().to_pybytes())
    else:
        digest.update("\n".join(json.dumps(d, sort_keys=True, default=str) for d in docs).encode())
    return digest.hexdigest()[:16]


def _named(value) -> str:
    """A function (or another object JSON cannot hold) by its qualified name: the same in every process."""
    return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', type(value).__qualname__)}"


def evaluate_tasks(model, tokenizer, suite: LMEvalSuite, window: int, batch_size: int,
                   progress: bool | None = None) -> dict:
    """One model on the suite's lm-eval tasks, requests of at most ``window`` tokens: ``{sets,
    predictions, zero_shot}``."""
    if not suite.sets:
        return {"sets": {}, "predictions": {}, "zero_shot": {**suite.describe, "window": window,
                                                            "batch_size": batch_size, "truncated_prompts": {}}}
    say(f"lm-eval: {len(suite.sets)} task(s), {sum(len(s) for s in suite.sets.values()):,} items, requests of at most "
        f"{window} tokens, scored by {suite.scoring}")
    samples = engine.evaluate(model, tokenizer, suite.tasks, {n: s.items for n, s in suite.sets.items()}, window,
                              batch_size, suite.scoring, progress, suite.manager)
    sets, predictions = {}, {}
    for name, task in suite.tasks.items():
        records = task_records(task, samples[name], end_tokens(model, tokenizer))
        if [r["doc"] for r in records["items"]] != suite.sets[name].items:
            raise ConfigError(f"lm-eval task {name}: lm-eval evaluated other items than those asked for")
        if records["output_type"] == MULTIPLE_CHOICE:  # the choice each model picks (deployment agreement)
            records["predicted"] = [int(np.argmax(scores(r, records["primary"]))) for r in records["items"]]
        predictions[name] = records
        sets[name] = summarize(records)
    chat = {"generation_chat_template": bool(getattr(tokenizer, "chat_template", None))} \
        if any(s.output_type == GENERATE for s in suite.sets.values()) else {}  # llm/lm.chat_turns
    return {"sets": sets, "predictions": predictions,
            "zero_shot": {**suite.describe, **chat, "window": window, "batch_size": batch_size,
                          "truncated_prompts": {}}}


def say(line: str) -> None:
    """A line on stderr under the pipeline's stage lines."""
    print(f"[forgetless]   {line}", file=sys.stderr, flush=True)


def summarize(records: dict) -> dict:
    """A task's numbers for the card's ``sets``: accuracy (the primary metric), acc, acc_norm, n for
    multiple choice; word / byte perplexity and bits per byte (lm-eval's aggregation) for rolling;
    every metric's mean over its units and the empty answers for generation; the first metric's mean otherwise."""
    items, primary = records["items"], records["primary"]
    n = len(items)
    if records["output_type"] == MULTIPLE_CHOICE:
        out = {"n": n, "metric": primary, "accuracy": float(np.mean([r[primary] for r in items])),
               "acc": float(np.mean([r["acc"] for r in items])), "near_ties": near_ties(records)}
        if primary == "acc_norm":
            out["acc_norm"] = out["accuracy"]
        return out
    if records["output_type"] == ROLLING:
        ll = sum(r["ll"] for r in items)
        out = {"n": n, "metric": "word_perplexity", "log_likelihood": ll}
        if all("words" in r and "bytes" in r for r in items):
            words, nbytes = sum(r["words"] for r in items), sum(r["bytes"] for r in items)
            out.update(words=words, bytes=nbytes, word_perplexity=float(np.exp(-ll / words)),
                       byte_perplexity=float(np.exp(-ll / nbytes)), bits_per_byte=float(-ll / nbytes / np.log(2)))
        return out
    if records["output_type"] == GENERATE:  # lm-eval's aggregate: the mean over each metric's units
        means = {m: float(unit_values(items, m).mean()) for m in records["metrics"]}
        return {"n": n, "metric": primary, primary: means[primary], "metrics": means,
                "empty_answers": sum(r["empty"] for r in items)}
    return {"n": n, "metric": primary, primary: float(np.mean([r["score"] for r in items]))}
