"""The LLM tasks (kind ``lm-eval``, run through lm-evaluation-harness: ``forgetless/llm/``).

* ``llm-zero-shot``: the zero-shot suite of the LLM-compression papers and model cards on the data
  folder's offline copies (``--data-dir``; ``../shared/data/llm``): ARC-Easy, ARC-Challenge,
  HellaSwag, PIQA, WinoGrande, OpenBookQA (lm-eval's prompts and metrics, the task YAMLs shipped in
  ``forgetless/llm/tasks``) and WikiText-2 test perplexity as the SparseGPT / Wanda scripts measure it
  (``metrics/perplexity.py``): one perplexity protocol. lm-eval's document-level ``wikitext`` (word /
  byte perplexity, rolling windows) is opt-in: ``--task lm-eval --lm-eval-tasks ...,wikitext_offline``.
* ``llm-generation``: what the model says, on the data folder's offline copies: instruction following
  (IFEval's prompts, lm-eval's checkers), grade-school maths (GSM8K, the final number), dialogue
  summaries (SAMSum, ROUGE-L), short answers (TweetQA, F1) and passkey retrieval swept over context
  lengths (256 … 4,096 tokens, those that fit the request window): ``generate_until`` tasks, each
  model answering greedily; ``GENERATION_ITEMS`` items per task unless ``--eval-size`` says otherwise.
* ``lm-eval``: any lm-eval task names (``--lm-eval-tasks``): lm-eval's own (they download their
  data unless it is cached), the shipped offline ones, or a folder of your own YAMLs
  (``--lm-eval-include DIR``); WikiText-2 perplexity too when the data folder has it.

Nothing trains on these items: the task's training split is calibration text for one-shot methods
(``--train FILE``: text lines or ``.jsonl``; default: the data folder's XSum sample documents, news
text like the papers' C4 and disjoint from every evaluated set).
"""
from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

from ..errors import ConfigError, OptionError
from .registry import TASKS, data_root, resolve_data_dir
from .task import ExampleSet, Task
from .task_kinds import task_kind
from .texts import read_texts

ZERO_SHOT = ("arc_easy_offline", "arc_challenge_offline", "hellaswag_offline", "piqa_offline", "winogrande_offline",
             "openbookqa_offline")
WIKITEXT = "wikitext2/wiki.test.raw"
CALIBRATION = "xsum/test_1000_llm_decoding.jsonl"
SUITES = ("llm-zero-shot", "lm-eval", "llm-generation")  # the LLM tasks: reading them takes a while
PASSKEY = {f"passkey_{n}_offline": n for n in (256, 512, 1024, 2048, 4096)}  # task → its prompts' length in tokens
GENERATION = ("ifeval_offline", "gsm8k_offline", "samsum_offline", "tweetqa_offline", *PASSKEY)
GENERATION_ITEMS = 32  # items per task of llm-generation unless --eval-size (sized for SmolLM2 on 2 cores: docs)
EVALUATED_CALIBRATION = "xsum_offline"  # the task whose documents are the default calibration texts
PASSKEY_SLACK = 0.05  # a tokenizer may give a passkey prompt this share more tokens than its nominal length
PASSKEY_ROOM = 32 + 12  # tokens of a chat template around the prompt, and the answer's (the YAMLs' max_gen_toks)
CONTEXT_CAP = 2048  # the request window's default cap (metrics/perplexity.py)


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
    if task.suite is not None and EVALUATED_CALIBRATION in task.suite.sets:
        return (f"task {task.name}: one-shot methods calibrate on text, and the default calibration texts ({CALIBRATION}) "
                f"are the documents {EVALUATED_CALIBRATION} evaluates: give --train FILE (text lines or .jsonl) or "
                "--calibration-data")
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


def _task(name: str, suite, train: ExampleSet, what: str, how: str | None = None) -> Task:
    tasks = ", ".join(f"{n} ({s.size} items)" for n, s in suite.sets.items())
    ppl = f"; {suite.perplexity.name} perplexity of {suite.perplexity.source} in at most {suite.perplexity.cap} " \
          f"non-overlapping windows (the SparseGPT / Wanda protocol)" if suite.perplexity else ""
    prompts = suite.divergence
    divergence = f"; divergence along the base's greedy answers to {len(prompts.prompts)} of the {prompts.size} " \
                 f"prompts of {prompts.source} (at most {prompts.max_new_tokens} new tokens)" if prompts else ""
    how = how or f"zero-shot, no chat template, log-likelihoods by {suite.scoring} scoring"
    protocol = f"{what}: lm-evaluation-harness {suite.describe.get('version')}, {how}: {tasks}{ppl}{divergence}"
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
    # xsum_offline evaluates the default calibration texts: none then, unless --train (missing_calibration)
    calibration_root = None if EVALUATED_CALIBRATION in names else root
    suite = build_suite(names, include, root, None, wikitext if wikitext and wikitext.is_file() else None,
                        perplexity_window,  # lm-eval's own tasks indexed only when a name is not in include
                        **_evaluation(seed, perplexity_windows, exact_lm_eval, until_interval))
    return _task("lm-eval", dataclasses.replace(suite, divergence=prompts), calibration_set(train, calibration_root),
                 "lm-eval tasks")


@TASKS.register(SUITES[2])
def _generation(data_dir=None, seed: int = 0, train: str | None = None, perplexity_window: int | None = None,
                exact_lm_eval: bool = False, divergence_prompts: int = 0, divergence_file: str | None = None,
                divergence_max_new_tokens: int | None = None) -> Task:
    from ..llm.engine import TASKS_DIR, require_lm_eval
    from ..llm.suite import build_suite

    require_lm_eval()
    root = resolve_data_dir(data_dir, "task llm-generation")
    prompts = prompts_to_answer(root, divergence_prompts, divergence_file, divergence_max_new_tokens, seed)
    suite = build_suite(list(GENERATION), TASKS_DIR, root, False, None, perplexity_window,
                        **_evaluation(seed, 0, exact_lm_eval, None))
    suite = suite.capped(GENERATION_ITEMS, seed + 1)  # load_task's seed for --eval-size, which replaces this default
    suite = dataclasses.replace(suite, divergence=prompts,
                                describe={**suite.describe, "passkey_sweep": "the lengths that fit the request window"})
    return _task("llm-generation", suite, calibration_set(train, root),
                 "the LLM generation suite on the data folder's offline copies",
                 f"zero-shot, greedy answers scored by lm-eval's per-item metrics ({GENERATION_ITEMS} items per task "
                 "unless --eval-size; passkey lengths up to the request window)")


# ----- the passkey sweep and the request window ---------------------------------------------------------
def request_window(window: int | None, max_positions: int | None) -> int:
    """The tokens of an lm-eval request (``metrics.perplexity.default_window`` before the model is loaded):
    ``window`` (--perplexity-window) when given, else the model's context capped at 2048."""
    return int(window) if window else min(int(max_positions or CONTEXT_CAP), CONTEXT_CAP)


def passkey_tokens(length: int) -> int:
    """The window a passkey prompt of nominal ``length`` tokens needs: the prompt (a tokenizer's share more),
    a chat template around it and the answer."""
    return math.ceil(length * (1 + PASSKEY_SLACK)) + PASSKEY_ROOM


def check_window(suite, max_positions: int | None, source) -> None:
    """Before the model is loaded (``validate.validate_run``): a request window past the model's context, or
    a passkey task named explicitly (``--lm-eval-tasks``) that does not fit the request window, is one
    ``ConfigError``; the sweep of ``llm-generation`` drops those lengths instead (``within_window``)."""
    generates = any(s.output_type == "generate_until" for s in suite.sets.values())
    if generates and suite.window and max_positions and suite.window > max_positions:
        raise ConfigError(f"--perplexity-window {suite.window}: model {source!r} takes at most {max_positions} tokens; "
                          f"give at most {max_positions}")
    if not suite.describe.get("passkey_sweep"):
        _refuse_long_passkeys(suite, request_window(suite.window, max_positions), f"model {source!r}")


def _refuse_long_passkeys(suite, window: int, model: str) -> None:
    for name in suite.sets:
        if name in PASSKEY and passkey_tokens(PASSKEY[name]) > window:
            fits = [n for n, length in PASSKEY.items() if passkey_tokens(length) <= window]
            raise ConfigError(f"--lm-eval-tasks {name}: its prompts of about {PASSKEY[name]:,} tokens need a window of "
                              f"{passkey_tokens(PASSKEY[name]):,} (a tokenizer's 5% more, a chat template, the answer); "
                              f"{model} is asked in requests of at most {window:,} tokens (--perplexity-window; "
                              f"default: its context capped at {CONTEXT_CAP}): "
                              f"{'name ' + ', '.join(fits) if fits else 'no passkey length fits'}")


def within_window(suite, window: int):
    """The suite its model can run in requests of ``window`` tokens: ``llm-generation``'s passkey lengths
    that fit (a line says which are dropped); a passkey task named explicitly that does not is one
    ``ConfigError`` (``check_window`` says so before the model loads on the command line)."""
    if not suite.describe.get("passkey_sweep"):
        _refuse_long_passkeys(suite, window, "the model")
        return suite
    dropped = [n for n in suite.sets if n in PASSKEY and passkey_tokens(PASSKEY[n]) > window]
    if not dropped:
        return suite
    print(f"[forgetless]   passkey sweep: {', '.join(dropped)} left out (prompts longer than the request window of "
          f"{window} tokens; --perplexity-window N widens it up to the model's context)", file=sys.stderr, flush=True)
    kept = [n for n in suite.sets if n not in dropped]
    return dataclasses.replace(suite, tasks={n: suite.tasks[n] for n in kept}, sets={n: suite.sets[n] for n in kept},
                               describe={**suite.describe, "passkey_left_out": dropped})


def within_model_window(task: Task, max_positions: int | None) -> Task:
    """``task`` for a model of ``max_positions`` tokens (None: not known, 2048): its passkey sweep cut to the
    lengths that fit the request window (``within_window``), its protocol naming those left out; the card
    then shows what ran. Other tasks as they are."""
    if task.suite is None or not task.suite.describe.get("passkey_sweep"):
        return task
    window = request_window(task.suite.window, max_positions)
    suite = within_window(task.suite, window)
    if suite is task.suite:
        return task
    left = ", ".join(suite.describe["passkey_left_out"])
    return dataclasses.replace(task, suite=suite, protocol=f"{task.protocol}; passkey tasks left out: {left} (past "
                                                             f"the request window of {window} tokens)")


def check_generation_room(suite, max_positions: int | None, source) -> None:
    """Each generation task's ``max_gen_toks`` leaves room for a prompt in the model's context of
    ``max_positions`` tokens (``llm/generation.py``), before the model loads."""
    from ..llm.generation import task_max_new_tokens
    from ..llm.records import GENERATE

    for name, s in (getattr(suite, "sets", None) or {}).items():
        if s.output_type == GENERATE and max_positions:
            new = task_max_new_tokens(suite.tasks[name], s.source)
            if new >= max_positions:
                raise OptionError(f"lm-eval task {name} ({s.source}): max_gen_toks {new} leaves no room for a prompt in "
                                  f"model {source!r}, which takes at most {max_positions} tokens; give fewer "
                                  "max_gen_toks in its generation_kwargs")


def check_run(task, config) -> None:
    """LLM tasks evaluate a pretrained model as it is: nothing trains on them (``--base as-is``, a
    method without recovery training), and the model is a causal LM (the ``lm-eval`` task kind's ``check_run``,
    registered below)."""
    if config.base != "as-is":
        raise ConfigError(f"task {task.name}: evaluates a pretrained LLM as it is (its items are test items, not "
                          "training data): pass --base as-is")
    for method in (config.method, *config.then):
        if method.recovers:
            raise ConfigError(f"task {task.name}: method {method.name} would train (--recovery fine-tune); its "
                              "texts are calibration only: pass --recovery none")
    if config.model_kind not in ("auto", task_kind(task).model_kind):
        raise ConfigError(f"task {task.name}: scores a causal language model; --model-kind {config.model_kind} "
                          "does not apply (leave it auto)")


task_kind("lm-eval").register(check_run=check_run)
