"""The LLM tasks (kind ``lm-eval``, run through lm-evaluation-harness: ``forgetless/llm/``).

* ``llm-zero-shot``: the zero-shot suite of the LLM-compression papers and model cards on the data
  folder's offline copies (``--data-dir``; ``../shared/data/llm``): ARC-Easy, ARC-Challenge,
  HellaSwag, PIQA, WinoGrande, OpenBookQA (lm-eval's prompts and metrics, the task YAMLs shipped in
  ``forgetless/llm/tasks``) and WikiText-2 test perplexity as the SparseGPT / Wanda scripts measure it
  (``metrics/perplexity.py``): one perplexity protocol. lm-eval's document-level ``wikitext`` (word /
  byte perplexity, rolling windows) is opt-in: ``--task lm-eval --lm-eval-tasks ...,wikitext_offline``.
* ``lm-eval``: any lm-eval task names (``--lm-eval-tasks``): lm-eval's own (they download their
  data unless it is cached), the shipped offline ones, or a folder of your own YAMLs
  (``--lm-eval-include DIR``); WikiText-2 perplexity too when the data folder has it.

Nothing trains on these items: the task's training split is calibration text for one-shot methods
(``--train FILE``: text lines or ``.jsonl``; default: the data folder's XSum sample documents, news
text like the papers' C4 and disjoint from every evaluated set).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import ConfigError
from .registry import TASKS, data_root, resolve_data_dir
from .task import ExampleSet, Task
from .task_kinds import task_kind
from .texts import read_texts

ZERO_SHOT = ("arc_easy_offline", "arc_challenge_offline", "hellaswag_offline", "piqa_offline", "winogrande_offline",
             "openbookqa_offline")
WIKITEXT = "wikitext2/wiki.test.raw"
CALIBRATION = "xsum/test_1000_llm_decoding.jsonl"
SUITES = ("llm-zero-shot", "lm-eval")  # the LLM tasks: reading them (lm-eval's task index, every document) takes a while


def _llm_folder(root: Path) -> Path:
    return root / "llm" if (root / "llm").is_dir() else root


def calibration_set(train: str | None, root: Path | None) -> ExampleSet:
    """The calibration texts: ``train`` (a file), else the data folder's XSum sample, else none (a run
    whose methods read calibration text is refused then: ``validate.check_calibration``)."""
    if train is not None and not Path(train).is_file():
        raise ConfigError(f"--train {train}: not a file (the calibration texts of an LLM task: text lines or .jsonl)")
    path = Path(train) if train else (root / CALIBRATION if root is not None else None)
    if path is None or not path.is_file():
        return ExampleSet("train", [], [], ["text"], source="", may_be_empty=True)
    texts = read_texts(path)
    return ExampleSet("train", texts, [0] * len(texts), ["text"], source=str(path))


def missing_calibration(task: Task) -> str:
    """Why an LLM task has no calibration texts, for the error of a method that needs them."""
    return (f"task {task.name}: one-shot methods calibrate on its training split, text only: give --train FILE (text "
            f"lines or .jsonl), --calibration-data, or --data-dir with {CALIBRATION}")


def with_calibration(task: Task, config) -> Task:
    """The task with its protocol naming the calibration texts the run ``config`` uses: its
    ``--calibration-data``, else the task's own (an LLM task: ``--train`` or the data folder's sample;
    another task: its training split); an LLM task says so when no method of the run reads any."""
    chain = (config.method, *config.then)
    if task_kind(task).calibration_only:
        reads = any(method.calibration != "none" for method in chain)
        used = (config.calibration_data or task.train.source) if reads else "none (no method of the run reads them)"
    elif any(method.calibration == "text" for method in chain):
        used = config.calibration_data or f"the training split ({task.train.source or task.name})"
    else:
        return task
    return dataclasses.replace(task, protocol=f"{task.protocol}; calibration texts: {used}")


def _task(name: str, suite, train: ExampleSet, what: str) -> Task:
    tasks = ", ".join(f"{n} ({s.size} items)" for n, s in suite.sets.items())
    ppl = f"; {suite.perplexity.name} perplexity of {suite.perplexity.source} in at most {suite.perplexity.cap} " \
          f"non-overlapping windows (the SparseGPT / Wanda protocol)" if suite.perplexity else ""
    prompts = suite.divergence
    divergence = f"; divergence along the base's greedy answers to {len(prompts.prompts)} of the {prompts.size} " \
                 f"prompts of {prompts.source} (at most {prompts.max_new_tokens} new tokens)" if prompts else ""
    protocol = (f"{what}: lm-evaluation-harness {suite.describe.get('version')}, zero-shot, no chat template, "
                f"log-likelihoods by {suite.scoring} scoring: {tasks}{ppl}{divergence}")
    return Task(name, None, train, None, kind="lm-eval", metric="accuracy", suite=suite, protocol=protocol)


def _evaluation(seed: int, perplexity_windows: int | None, exact_lm_eval: bool, until_interval: float | None) -> dict:
    """The evaluation options every LLM suite takes (``build_suite``'s keywords)."""
    return {"seed": seed, "perplexity_windows": perplexity_windows, "exact": exact_lm_eval,
            "until_interval": until_interval}


def prompts_to_answer(root: Path | None, n: int, file: str | None, max_new_tokens: int | None, seed: int):
    """The prompts the base answers (``llm/answers.PromptSet``): ``n`` of ``file``, default the data folder's
    IFEval prompts; None when ``n`` is 0 (off). Read now, before any model is loaded."""
    from ..llm.answers import IFEVAL_PROMPTS, prompt_set

    if not n:
        given = [flag for flag, value in (("--divergence-file", file),
                                          ("--divergence-max-new-tokens", max_new_tokens)) if value is not None]
        if given:
            raise ConfigError(f"{' and '.join(given)}: settings of the divergence along the base's answers, which is "
                              "off; give --divergence-prompts N (the number of prompts)")
        return None
    if file is None:
        if root is None:
            raise ConfigError(f"--divergence-prompts {n}: its default prompts are the data folder's IFEval prompts; "
                              f"give --divergence-file FILE, or --data-dir DIR holding llm/{IFEVAL_PROMPTS}")
        file = _llm_folder(root) / IFEVAL_PROMPTS
        if not file.is_file():
            raise ConfigError(f"--divergence-prompts {n}: {file} is missing (IFEval's prompts); give "
                              "--divergence-file FILE")
    return prompt_set(file, n, max_new_tokens, seed)


@TASKS.register(SUITES[0])
def _zero_shot(data_dir=None, seed: int = 0, train: str | None = None, perplexity_window: int | None = None,
               perplexity_windows: int | None = None, exact_lm_eval: bool = False,
               until_interval: float | None = None, divergence_prompts: int = 0, divergence_file: str | None = None,
               divergence_max_new_tokens: int | None = None) -> Task:
    from ..llm.engine import TASKS_DIR, require_lm_eval
    from ..llm.suite import build_suite

    require_lm_eval()
    root = resolve_data_dir(data_dir, "task llm-zero-shot")
    prompts = prompts_to_answer(root, divergence_prompts, divergence_file, divergence_max_new_tokens, seed)
    wikitext = _llm_folder(root) / WIKITEXT
    if not wikitext.is_file() and perplexity_windows != 0:
        raise ConfigError(f"task llm-zero-shot: {wikitext} is missing (WikiText-2 test; layout in "
                          "../shared/data/llm/README.md)")
    suite = build_suite(list(ZERO_SHOT), TASKS_DIR, root, False, wikitext, perplexity_window,
                        **_evaluation(seed, perplexity_windows, exact_lm_eval, until_interval))
    return _task("llm-zero-shot", dataclasses.replace(suite, divergence=prompts), calibration_set(train, root),
                 "the LLM zero-shot suite on the data folder's offline copies")


@TASKS.register(SUITES[1])
def _lm_eval(data_dir=None, seed: int = 0, train: str | None = None, lm_eval_tasks: list[str] | None = None,
             lm_eval_include: str | None = None, perplexity_window: int | None = None,
             perplexity_windows: int | None = None, exact_lm_eval: bool = False,
             until_interval: float | None = None, divergence_prompts: int = 0, divergence_file: str | None = None,
             divergence_max_new_tokens: int | None = None) -> Task:
    from ..llm.engine import TASKS_DIR, require_lm_eval
    from ..llm.suite import build_suite

    require_lm_eval()
    names = [n.strip() for n in lm_eval_tasks or [] if n.strip()]
    if not names:
        raise ConfigError("task lm-eval: name its lm-eval tasks: --lm-eval-tasks NAME[,NAME...]")
    if len(set(names)) != len(names):
        raise ConfigError(f"--lm-eval-tasks {','.join(names)}: a task is named twice")
    root = data_root(data_dir)
    prompts = prompts_to_answer(root, divergence_prompts, divergence_file, divergence_max_new_tokens, seed)
    wikitext = _llm_folder(root) / WIKITEXT if root is not None else None
    if perplexity_windows and not (wikitext and wikitext.is_file()):  # asked for, and it would not run
        where = f"{wikitext} is missing" if wikitext else "no --data-dir is given (nor $FORGETLESS_DATA_DIR)"
        raise ConfigError(f"--perplexity-windows {perplexity_windows}: task lm-eval scores WikiText-2 perplexity from "
                          f"the data folder's {WIKITEXT}, and {where}; give --data-dir with it, or drop "
                          "--perplexity-windows")
    include = [TASKS_DIR] + ([Path(lm_eval_include)] if lm_eval_include else [])
    suite = build_suite(names, include, root, None, wikitext if wikitext and wikitext.is_file() else None,
                        perplexity_window,  # lm-eval's own tasks indexed only when a name is not in include
                        **_evaluation(seed, perplexity_windows, exact_lm_eval, until_interval))
    return _task("lm-eval", dataclasses.replace(suite, divergence=prompts), calibration_set(train, root), "lm-eval tasks")
