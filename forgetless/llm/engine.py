"""lm-evaluation-harness (EleutherAI, 0.4.x) as the engine of forgetless's LLM evaluation, through
its public surface only: ``TaskManager`` and its tasks, ``simple_evaluate`` and the ``LM`` interface.

forgetless loads the tasks (its own YAMLs for the offline copies, ``tasks/``; lm-eval's by name; a
user's folder of YAMLs), picks the items of each task (seeded, the same for every model), and calls
``lm_eval.simple_evaluate`` with ``log_samples=True`` on its own ``LM`` (``lm.py``): lm-eval builds every
request and computes every per-item metric; forgetless computes the log-likelihoods (shared-context
scoring, ``scoring.py``; or lm-eval's own ``HFLM`` with ``--exact-lm-eval``), reads the logged samples
(``records.py``) and pairs base and compressed item by item (``metrics/paired.py``). As lm-eval does
by default: zero-shot, no chat template, no BOS token added to the requests.

lm-eval is an optional dependency (``pip install "forgetless[llm]"``); without it an LLM task is one
clear error before any model is loaded (``require_lm_eval``).
"""
from __future__ import annotations

import contextlib
import functools
import logging
from pathlib import Path

from ..errors import ConfigError, DataError, ForgetlessError

INSTALL = 'pip install "forgetless[llm]" (or: pip install "lm-eval[hf]>=0.4.10,<0.5")'
TASKS_DIR = Path(__file__).parent / "tasks"  # the shipped YAMLs of the offline copies (package data)


def require_lm_eval():
    """The ``lm_eval`` module; one ``ConfigError`` naming the install command when it is missing."""
    try:
        import lm_eval
        from lm_eval.models.huggingface import HFLM  # noqa: F401  (needs transformers: lm-eval[hf])
        from lm_eval.tasks import TaskManager  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the LLM tasks (llm-zero-shot, lm-eval) run through lm-evaluation-harness, which is "
                          f"not installed ({exc.name or exc}): {INSTALL}") from exc
    return lm_eval


@contextlib.contextmanager
def quiet():
    """lm-eval's own logging down to errors while the block runs (forgetless prints its stages)."""
    logger = logging.getLogger("lm_eval")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def without_environment_report():
    """lm-eval's ``simple_evaluate`` describes the environment into its results (torch's ``collect_env``:
    ``pip list`` and other child processes, about 3 s of every evaluation on two cores); forgetless does not
    read it (the card has its own environment section), so it is skipped while the block runs."""
    import lm_eval.evaluator as evaluator

    saved = getattr(evaluator, "add_env_info", None)
    if saved is None:  # another lm-eval: nothing to skip
        yield
        return
    evaluator.add_env_info = lambda storage: None
    try:
        yield
    finally:
        evaluator.add_env_info = saved


@contextlib.contextmanager
def request_bars(shown: bool):
    """lm-eval's own bar while it builds a task's requests (``Task.build_all_requests``, a ``tqdm`` it imports
    at module level) follows forgetless's switch: off (``--no-progress``, or stderr not a terminal) while
    the block runs."""
    import lm_eval.api.task as lm_eval_task

    saved = getattr(lm_eval_task, "tqdm", None)
    if shown or saved is None:
        yield
        return
    lm_eval_task.tqdm = functools.partial(saved, disable=True)
    try:
        yield
    finally:
        lm_eval_task.tqdm = saved


def task_manager(include, data_dir: str | Path | None, defaults: bool | None, names=()):
    """An lm-eval ``TaskManager`` over ``include`` (folders of task YAMLs) and, with ``defaults``,
    lm-eval's own tasks (None: only when one of ``names`` is not in ``include``); ``data_dir`` reaches
    the shipped YAMLs' readers as ``metadata``. Indexing lm-eval's own tasks takes seconds to a minute:
    one process reuses a manager while the YAMLs are unchanged."""
    require_lm_eval()
    if defaults is None:
        own = task_manager(include, data_dir, False)
        if all(name in own.all_tasks for name in names) or _unreadable_yamls(own.include_path):
            return own  # everything is here, or a broken YAML here is the likely missing task (load_tasks says so)
        defaults = True
    folders = [Path(p) for p in (include if isinstance(include, (list, tuple)) else [include]) if p is not None]
    for folder in folders:
        if not folder.is_dir():
            raise DataError(f"--lm-eval-include {folder}: not a folder of lm-eval task YAMLs")
    yamls = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for f in folders for p in sorted(f.rglob("*.yaml")))
    data = str(Path(data_dir).expanduser().resolve()) if data_dir else None
    try:
        return _manager(tuple(str(f) for f in folders), yamls, data, defaults)
    except Exception as exc:  # noqa: BLE001 - lm-eval up to 0.4.11 stops indexing at a YAML it cannot parse
        broken = _unreadable_yamls(folders)
        if broken:
            raise DataError(f"{broken[0][0]} is not valid YAML ({broken[0][1]})") from exc
        raise


@functools.lru_cache(maxsize=8)
def _manager(folders: tuple, yamls: tuple, data_dir: str | None, defaults: bool):
    from lm_eval.tasks import TaskManager

    with quiet():
        return TaskManager(include_path=list(folders) or None, include_defaults=defaults,
                           metadata={"data_dir": data_dir} if data_dir else None)


def load_tasks(names: list[str], manager) -> dict:
    """``{name: lm-eval Task}`` with its documents read, before any model is loaded. An unknown name
    (with the closest known ones), a group, or a task whose YAML or data file is missing or malformed
    is one ``ForgetlessError`` naming it."""
    known = set(manager.all_tasks)
    for name in names:
        if name not in known:
            import difflib

            broken = _unreadable_yamls(manager.include_path)
            if broken:  # lm-eval's index skips a YAML it cannot parse: name it
                raise DataError(f"lm-eval task {name!r} is not known; {broken[0][0]} is not valid YAML ({broken[0][1]})")
            close = difflib.get_close_matches(name, sorted(known), n=3)
            raise ConfigError(f"lm-eval task {name!r} is not known" + (f"; did you mean {', '.join(close)}?" if close
                              else "; `lm-eval ls tasks` lists lm-eval's own, --lm-eval-include adds a folder"))
    from lm_eval.api.task import Task

    tasks = {}
    for name in names:
        where = yaml_path(manager, name)
        try:
            with quiet():
                loaded = _load(manager, name)
        except ForgetlessError as exc:  # a shipped reader's DataError names the file already
            raise DataError(f"lm-eval task {name} ({where}): {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - lm-eval / datasets raise anything; one line naming the task
            raise DataError(f"lm-eval task {name} ({where}): cannot load its YAML or data "
                            f"({type(exc).__name__}: {exc})") from exc
        task = loaded.get(name)
        if len(loaded) != 1 or not isinstance(task, Task):
            raise ConfigError(f"lm-eval name {name!r} is a group or tag of {_names(loaded)}; name the tasks one by "
                              "one (the paired analysis is per task)")
        try:
            docs = task.eval_docs
            count = len(docs)
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"lm-eval task {name} ({where}): cannot read its evaluation documents ({exc})") from exc
        if not count:
            raise DataError(f"lm-eval task {name} ({where}): has no evaluation documents")
        tasks[name] = task
    return tasks


def _unreadable_yamls(include) -> list[tuple[Path, str]]:
    """``(file, problem)`` of every YAML under the include folders that does not parse (lm-eval's
    ``!function`` tags and the like are accepted as they are)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    folders = include if isinstance(include, (list, tuple)) else [include] if include else []
    broken = []
    for path in sorted(p for folder in folders for p in Path(folder).rglob("*.yaml")):
        try:
            yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)  # noqa: S506 - SafeLoader subclass
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            broken.append((path, " ".join(str(exc).split())[:160]))
    return broken


def yaml_path(manager, name: str) -> str:
    """The YAML file a task was read from (the card and the output rule name it); lm-eval's index
    holds a dict per task up to 0.4.11, an object since 0.4.12."""
    entry = manager.task_index.get(name)
    path = entry.get("yaml_path") if isinstance(entry, dict) else getattr(entry, "yaml_path", None)
    return str(path or "lm-eval's task index")


def _load(manager, name: str) -> dict:
    """``{name: Task}`` (or a group's nesting) as lm-eval loads it: ``TaskManager.load`` since 0.4.12,
    ``get_task_dict`` before (deprecated since)."""
    if not hasattr(manager, "load"):  # lm-eval 0.4.10 / 0.4.11
        from lm_eval.tasks import get_task_dict

        return get_task_dict([name], manager)
    loaded = manager.load([name])
    return loaded["tasks"] if not loaded.get("groups") else {**loaded["groups"], **loaded["tasks"]}


def _names(loaded: dict) -> list[str]:
    """The task names under what ``get_task_dict`` loaded (groups hold dicts of their tasks)."""
    return sorted(n for key, value in loaded.items()
                  for n in (_names(value) if isinstance(value, dict) else [str(key)]))


def evaluate(model, tokenizer, tasks: dict, items: dict[str, list[int]], window: int, batch_size: int,
             scoring_path: str = "shared-context", progress: bool | None = None, manager=None) -> dict:
    """Run ``lm_eval.simple_evaluate`` on ``model`` for ``tasks`` restricted to ``items`` (doc ids), in
    one call (lm-eval gathers the requests of every task); returns lm-eval's logged samples ``{task:
    [sample]}``, in doc order. Requests of at most ``window`` tokens (lm-eval cuts longer contexts from
    the left, as it does everywhere), ``batch_size`` rows per forward; ``scoring_path``: ``lm.SHARED``
    or ``lm.EXACT`` (``lm.py``); ``manager``: the ``TaskManager`` the tasks came from (lm-eval up to
    0.4.11 looks each task up in its index)."""
    require_lm_eval()
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from .lm import ForgetlessLM

    was_training = model.training
    model.eval()
    try:
        with quiet(), without_environment_report():
            lm = ForgetlessLM(model, tokenizer, window, batch_size, scoring_path, progress)
            with request_bars(lm.progress):
                out = simple_evaluate(model=lm, tasks=list(tasks.values()),
                                      task_manager=manager or TaskManager(include_defaults=False),
                                      samples={n: list(items[n]) for n in tasks}, log_samples=True, bootstrap_iters=0,
                                      apply_chat_template=False, random_seed=None, numpy_random_seed=None,
                                      torch_random_seed=None)
    finally:
        model.train(was_training)
    samples = {n: sorted(out["samples"][n], key=lambda s: s["doc_id"]) for n in tasks}
    for name, logged in samples.items():  # the tokens each choice scored (shared-context: near ties, records.py)
        for sample in logged:
            if tasks[name].OUTPUT_TYPE == "generate_until":  # its answer's token ids (generation.py; not --exact-lm-eval)
                prompt = (name, sample["arguments"][0][0]) if sample.get("arguments") else None
                if prompt in lm.generated:
                    sample["generated_tokens"] = lm.generated[prompt]
                continue
            counts = [lm.scored.get((name, tuple(arguments))) for arguments in sample.get("arguments") or []]
            if counts and None not in counts:
                sample["scored_tokens"] = counts
    return samples
