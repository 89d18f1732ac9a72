"""The Python API: objects in, objects out (llm-compressor's ``oneshot``, torchao's ``quantize_``,
peft's ``get_peft_model``)::

    import forgetless
    pruned = forgetless.apply(model, forgetless.WandaConfig(pattern="2:4"), calibration=texts, tokenizer=tok)
    forgetless.evaluate(pruned, "sst2", base=original, tokenizer=tok)   # the paired comparison

    run = forgetless.compress(model=bert_object_or_name, data=dataset_dict, method=TruncateConfig(layers=1))
    run.model, run.tokenizer, run.card                # the compressed model object, its report card
    run.save("compressed/")                           # every output, as `forgetless compress` writes them

* ``apply(model, methods, calibration, tokenizer)`` applies one method or a stack to a model object
  and returns it: nothing else (no teacher, evaluation, speed, card or file); ``apply_streamed(folder,
  methods, calibration, out_dir=)`` does it block by block for a decoder-only LM on disk, into a folder;
* ``compress(model, data, method, ...)`` is the whole job of ``forgetless compress`` in memory: a
  ``pipeline.Run`` (``.model``, ``.tokenizer``, ``.card``, ``.save(path)``); nothing is written
  unless ``out_dir`` is given (a run that trains works in a temporary folder, removed at the end);
* ``evaluate(model, data)`` scores a model on every set of a task; with ``base=`` it gives the paired
  comparison of the two models (the report card's sets, bias, hard / easy, intervals, agreement).

``model``: a name (``minilm``, ``tiny-bert``), a folder, or a ``PreTrainedModel`` (``compress`` copies
it; ``apply`` changes it in place where the method can). ``data``: a task name, a ``Task``, a
``datasets.DatasetDict`` or a dict of ``datasets.Dataset`` (``Task.from_datasets``; ``columns`` names
its columns). ``method`` / ``objective``: a name or a config (``HeadsConfig(ratio=0.5)``, or
``forgetless.METHODS.make_config("heads", {"ratio": 0.5})``). Every wrong type is one
``ForgetlessError`` before any work.
"""
from __future__ import annotations

import copy
import difflib
import os
from dataclasses import fields
from pathlib import Path

from .arguments import check_arguments, check_device
from .config import CleverConfig, EvalConfig, MethodConfig, RunConfig, SpeedConfig, TaskConfig, TrainConfig
from .data.llm_tasks import within_model_window
from .data.task import Task, cap_task
from .data.tasks import load_task, task_from_config
from .errors import ConfigError
from .evaluate_saved import check_kind_fits, evaluate_loaded, evaluate_model, evaluate_saved, saved_kind
from .kinds import KINDS, kind_for
from .kinds.in_memory import (check_model_object, check_tokenizer_object, find_tokenizer, is_in_memory, kind_name_of,
                               label)
from .methods._shared.calibration import calibration_texts
from .methods.base import CompressionContext
from .methods._shared.sensitivity import check_sensitivity
from .offline import check_offline_tasks
from .metrics.calibration import calibration_section
from .metrics.runtime import agreement
from .options import build
from .pipeline import Run, run, run_and_save
from .models.loading import resolve_model_path
from .models.checks import check_finite_model, check_finite_weights, check_model_folder, weight_files
from .models.io import check_saved_model, is_forgetless_folder
from .outputs import check_output, model_folder_lock
from .recipes import load_recipe
from .recipes.catalog import recipe_names
from .registry import METHODS, OBJECTIVES
from .report.card import comparison
from .report.card_types import Agreement, Comparison, Scores
from .report.honest import evaluated_texts
from .report.trust import calibration_leak
from .schemes import SCHEMES, scheme_methods
from .validate import check_chain, check_modules, model_dims, module_checked

SECTIONS = {"train": TrainConfig, "speed": SpeedConfig, "eval": EvalConfig, "clever": CleverConfig}
COLUMNS = ("text", "text_pair", "label", "target", "labels", "name", "train_size", "eval_size")
RUN_OPTIONS = tuple(f.name for f in fields(RunConfig) if f.name not in ("model", "method", "objective", "task"))


def apply(model, methods, calibration=None, tokenizer=None, *, seed: int = 0):
    """Apply ``methods`` to ``model`` (a ``PreTrainedModel``) and return the compressed model; the
    model is changed in place where the method can (keep a copy to compare with). ``methods``: a
    method config (``WandaConfig(pattern="2:4")``), a name, a list of them applied in order
    (``[SparseGPTConfig(...), GptqConfig(...)]``), a scheme (``"W8A8-INT8"``, as ``--scheme``: its
    methods) or a recipe (file or built-in name: its ``method`` and ``then``). ``calibration``: the
    texts of methods that calibrate on text — a ``datasets.Dataset`` with a text column, a list of
    strings, a text file, or a set of the data folder by name (``xsum``, ``wikitext2``, ``samsum``;
    ``$FORGETLESS_DATA_DIR``); given once, every method of the stack that calibrates reads it. ``tokenizer``: the model's (default: the one saved beside
    ``model.name_or_path``). Only methods that train nothing and read no labelled task apply here
    (``forgetless.compress`` runs the others); a model on disk: ``apply_streamed``. Every argument is
    checked before any work as the command line checks its flags (``arguments.py``)."""
    check_arguments(seed=seed)
    stack = method_stack(methods)
    if isinstance(model, (str, Path)):
        raise ConfigError(f"model {str(model)!r}: apply takes a model object; compress a decoder-only LM's folder "
                          "layer by layer with forgetless.apply_streamed(folder, methods, calibration=..., "
                          "out_dir=...), or load it first (forgetless.load_model, transformers)")
    check_model_object(model, "any")
    kind = KINDS[kind_name_of(model)]
    _check_stack(stack, kind.name, model_dims(model))
    check_modules(stack, model, listed=True)  # every method's options against the modules, before the first runs
    readers = [config.name for config in stack if config.calibration == "text"]
    _check_calibration(stack, readers, calibration)
    texts = calibration_texts(calibration) if calibration is not None else None
    tokenizer = find_tokenizer(model, tokenizer, None) if readers else tokenizer
    check_finite_model(model)  # NaN weights: one line, not a Cholesky failure deep in SparseGPT / GPTQ
    ctx = CompressionContext(task=None, tokenizer=tokenizer, teacher=None, work_dir=None,
                             train_config=TrainConfig(progress=False), seed=seed, kind=kind, calibration=texts)
    for config in stack:
        model = METHODS.build(config).compress(model, ctx).eval()
    return model


def apply_streamed(model, methods, calibration=None, *, out_dir, tokenizer=None, seed: int = 0,
                   device: str = "cpu", overwrite: bool = False) -> Path:
    """Compress a decoder-only LM given as a folder (or an offline LLM's name: ``"smollm2"``) with
    one-shot methods (wanda, sparsegpt, gptq with integer codes, smoothquant), streamed: the weights stay on
    disk and each decoder block is read, calibrated, compressed on ``device`` and written to the model folder
    ``out_dir`` in turn (``methods/_shared/streamed.py``); returns ``out_dir`` (a new or empty folder, or,
    with ``overwrite=True``, the model of an earlier ``apply_streamed``). ``methods`` and ``calibration`` as
    for ``apply``: a stack (``"W8A8-INT8"``: smoothquant, then gptq int8 with int8 inputs) runs one streamed
    pass per method, each reading the folder the one before wrote inside ``out_dir``'s temporary folder
    (one more copy of the weights on disk, gone when the call returns), bit for bit what ``apply`` gives;
    only its last method may quantize. The folder's weights, the output folder and its disk's free space
    (twice the weights, three times for a stack) are checked before any work. Two calls into
    one ``out_dir``: the second (while the first runs, or after it, without ``overwrite=True``) is refused
    and the first's model stays (``outputs.model_folder_lock``)."""
    from .kinds.causal_lm import meta_model_of
    from .methods._shared.streamed import check_streamable, compress_streamed

    check_arguments(seed=seed, overwrite=overwrite)
    stack = method_stack(methods)
    if not isinstance(model, (str, Path)):
        raise ConfigError(f"model: apply_streamed reads a folder or an offline LLM's name, got a "
                          f"{type(model).__name__}; a model object: forgetless.apply")
    check_device(device)
    check_chain(stack, None, "model", listed=True)  # only the last method quantizes: a quantized folder won't stream
    check_streamable(stack, out_dir)
    folder = resolve_model_path(str(model))
    given = {"model": folder, "calibration": str(calibration) if isinstance(calibration, (str, Path)) else None}
    check_output(out_dir, "--out", command="apply", inputs=given, overwrite=overwrite)
    _check_calibration(stack, [config.name for config in stack], calibration)
    texts = calibration_texts(calibration)
    tokenizer = check_tokenizer_object(tokenizer) if tokenizer is not None else None
    check_model_folder(folder)  # config.json fits the weights (a forgetless folder: its manifest too)
    if is_forgetless_folder(folder):
        check_saved_model(folder)
    check_modules(stack, meta_model_of(folder), listed=True)  # every method's options against the modules
    check_finite_weights(weight_files(folder))  # every weight finite (reads them once, one tensor at a time)
    with model_folder_lock(out_dir):  # a second call into out_dir, at once or while this one runs: refused
        check_output(out_dir, "--out", command="apply", inputs=given, overwrite=overwrite)  # one finished meanwhile
        return compress_streamed(folder, stack, texts, out_dir, tokenizer=tokenizer, device=device, seed=seed)


def _check_stack(stack: list[MethodConfig], kind: str, dims: dict | None) -> None:
    """Each method applies to the model kind, trains nothing and reads no labelled task; the stack in
    ``--then``'s order (the quantizing method last) and against the model's shape."""
    for config in stack:
        if kind not in config.model_kinds:
            raise ConfigError(f"method {config.name!r} does not apply to a {kind} model; it compresses: "
                              f"{', '.join(config.model_kinds)} models")
        if config.calibration == "task":
            raise ConfigError(f"method {config.name!r} scores the model on a labelled task; apply has none: use "
                              "forgetless.compress with a task")
        check_sensitivity(config, None)  # the ranking needs the run's base model: before asking for texts
        if config.recovers:
            raise ConfigError(f"method {config.name!r} trains after compressing (recovery: fine-tune); apply trains "
                              "nothing: give it recovery='none', or use forgetless.compress with a task")
    check_chain(stack, dims, "model", listed=True, module_checked=module_checked(stack))  # the rest: check_modules


def _check_calibration(stack: list[MethodConfig], readers: list[str], calibration) -> None:
    if calibration is not None and not readers:
        raise ConfigError(f"calibration: no method of {', '.join(c.name for c in stack)} calibrates on text")
    if readers and calibration is None:
        raise ConfigError(f"calibration: {', '.join(readers)} calibrates on text; pass calibration= (a list of "
                          "texts, a datasets.Dataset, a text file or a data-folder set)")


def method_stack(methods) -> list[MethodConfig]:
    """The method configs ``apply`` runs, in order (see ``apply``): a name that is neither a method,
    a recipe file nor a built-in recipe is an unknown method (with the closest method names)."""
    if isinstance(methods, (list, tuple)):
        if not methods:
            raise ConfigError("methods: an empty list; give at least one method config")
        return [METHODS.config(item) for item in methods]
    if isinstance(methods, str) and methods in SCHEMES:
        return scheme_methods(methods)
    if isinstance(methods, (str, Path)) and str(methods) not in METHODS.names():
        if isinstance(methods, str) and not Path(methods).expanduser().exists() and methods not in recipe_names():
            _unknown_method(methods)
        recipe = load_recipe(methods)
        if recipe["command"] != "compress":
            raise ConfigError(f"methods {methods}: a {recipe['command']} recipe; apply takes a compress recipe")
        return [recipe["config"].method, *recipe["config"].then]
    return [METHODS.config(methods)]


def _unknown_method(name: str) -> None:
    """The registry's error for an unknown method (the methods, the closest one), saying it is no recipe or
    scheme either (the closest of those)."""
    try:
        METHODS.config(name)
    except ConfigError as exc:
        close = difflib.get_close_matches(name, [*recipe_names(), *SCHEMES], n=1)
        what = "scheme" if close and close[0] in SCHEMES else "recipe"
        recipe = f"did you mean the {what} {close[0]!r}?" if close else \
            f"a recipe is a file or a built-in name: `forgetless recipes`; a scheme: {', '.join(SCHEMES)}"
        raise ConfigError(f"{exc.args[0]} Not a recipe or scheme either ({recipe})") from None


def compress(model, data, method=None, *, tokenizer=None, objective=None, out_dir=None,
             columns: dict | None = None, overwrite: bool = False, **run_options) -> Run:
    """Compress ``model`` on ``data`` with ``method`` (module docstring; default: ``RunConfig``'s);
    ``run_options`` are the other ``RunConfig`` fields (``base``, ``train``, ``speed``, ``eval``, ``seed``, ``then`` …). With
    ``out_dir`` every output is written there as by ``forgetless compress``; without, nothing."""
    check_arguments(seed=run_options.get("seed", 0), overwrite=overwrite)
    _check_model(model)
    task = as_task(data, columns, run_options.get("seed", 0))
    config = run_config(model, method, objective, task, run_options)
    given = model if is_in_memory(model) else None
    if given is not None:  # no tokenizer, or a model that does not fit the run: one error now
        tokenizer = find_tokenizer(given, tokenizer, task)
    elif tokenizer is not None:
        raise ConfigError(f"tokenizer: model {str(model)!r} is loaded with its own tokenizer (the task's for "
                          "tiny models); pass a model object to use another one")
    if out_dir is not None:
        return run_and_save(task, config, out_dir, overwrite=overwrite, model=given, tokenizer=tokenizer)
    return run(task, config, model=given, tokenizer=tokenizer)


def evaluate(model, data, *, base=None, tokenizer=None, batch_size: int = 64, max_length: int = 128,
             columns: dict | None = None, model_kind: str = "auto", seed: int = 0, data_dir=None,
             eval_size: int | None = None, lm_eval_tasks=None, lm_eval_include=None,
             calibration=None, perplexity_windows: int | None = None, divergence_prompts: int = 0,
             divergence_file=None, divergence_max_new_tokens: int | None = None) -> Scores | Comparison:
    """``Scores`` of ``model`` (a folder, or a model object with its tokenizer) on every set of ``data``
    (``.sets``, ``.challenge_pooled``, ``.params`` …). With ``base`` (another folder or model object: the
    model before compression), the paired ``Comparison`` of the two models on the same examples
    instead (the card's sections: sets with both models' scores, pooled challenge accuracy, relative bias,
    hard / easy, bootstrap intervals, agreement, calibration, warnings, and both models' ``params``; an LLM
    suite: its ``llm`` section, the numbers of ``forgetless compress``'s card for the same items). Both
    give plain JSON with ``.to_dict()``. Nothing is written.

    A task name takes the options of ``forgetless compress --task``: ``data_dir`` (``--data-dir``),
    ``eval_size`` (``--eval-size``: N items of each lm-eval task, N examples of each set), ``perplexity_windows``
    (``--perplexity-windows``: the WikiText-2 windows of an LLM task, default 40; 0: none), and for ``"lm-eval"``
    ``lm_eval_tasks`` (names, or one comma-separated string) and ``lm_eval_include`` (a folder of task YAMLs); an
    LLM suite with ``base`` also ``divergence_prompts`` (``--divergence-prompts``: the compressed model scored along
    the base's own greedy answers, ``llm/answers.py``), ``divergence_file`` and ``divergence_max_new_tokens``.
    ``calibration`` (with ``base``): the texts ``model`` was calibrated on (what ``apply`` was given): a warning
    when they are in what is evaluated (WikiText-2 calibration, then WikiText-2 perplexity). Every argument is
    checked before any work; what lm-eval's child processes print (``git``) stays off the terminal."""
    from .cli import quiet_children

    check_arguments(seed=seed, batch_size=batch_size, max_length=max_length, model_kind=model_kind)
    _check_evaluate_arguments(model, base, tokenizer, data, columns, data_dir, eval_size, lm_eval_tasks,
                              lm_eval_include, calibration, perplexity_windows)
    divergence = {"divergence_prompts": divergence_prompts,
                  "divergence_file": None if divergence_file is None else str(divergence_file),
                  "divergence_max_new_tokens": divergence_max_new_tokens}
    if base is None and (divergence_prompts or divergence_file or divergence_max_new_tokens):
        raise ConfigError("divergence_prompts: compares the model with its base along the base's answers; give base=")
    texts = None if calibration is None else calibration_texts(calibration, data_dir)
    task = evaluated_task(data, columns, seed, data_dir, eval_size, lm_eval_tasks, lm_eval_include, perplexity_windows,
                          divergence)
    task = within_model_window(task, (model_dims(model) or {}).get("max_positions"))  # the passkey sweep that fits
    with quiet_children():
        if base is None:
            return Scores.from_json(_scores(model, task, tokenizer, batch_size, max_length, model_kind))
        if getattr(task.suite, "divergence", None) is not None:
            results = _scored_with_answers(base, model, task, tokenizer, batch_size, max_length, model_kind, seed)
        else:
            results = {role: _scores(m, task, tokenizer, batch_size, max_length, model_kind, keep_predictions=True)
                       for role, m in (("base", base), ("compressed", model))}
    predictions = {role: results[role].pop("predictions") for role in results}
    compared = comparison(task, results, predictions, seed, calibration_section(task, predictions))
    leak = None if texts is None else calibration_leak(texts, evaluated_texts(task))
    params = {role: results[role].pop("params") for role in results}
    return Comparison(**{**compared.sections(), "warnings": compared.warnings + ([leak] if leak else [])},
                      agreement=Agreement(**agreement(predictions)), params=params)


def _check_evaluate_arguments(model, base, tokenizer, data, columns, data_dir, eval_size, lm_eval_tasks,
                              lm_eval_include, calibration, perplexity_windows) -> None:
    """``evaluate``'s arguments that ``check_arguments`` does not know, each of its type (a whole number, a path,
    task names), and the ones that only apply with another: one ``ConfigError`` naming it, before any work."""
    _check_model(model)
    if base is not None:
        _check_model(base)
    if tokenizer is not None:
        check_tokenizer_object(tokenizer)
        saved = next((m for m in (model, base) if m is not None and not is_in_memory(m)), None)
        if saved is not None:
            raise ConfigError("tokenizer: a saved model is evaluated with the tokenizer saved beside it; drop tokenizer=")
    for name, value in (("eval_size", eval_size), ("perplexity_windows", perplexity_windows)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(f"{name}={value!r}: expected a whole number, got {type(value).__name__}")
    for name, value in (("data_dir", data_dir), ("lm_eval_include", lm_eval_include)):
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ConfigError(f"{name}={value!r}: expected a folder (a path), got {type(value).__name__}")
    names = [lm_eval_tasks] if isinstance(lm_eval_tasks, str) else lm_eval_tasks
    if names is not None and (not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names)):
        raise ConfigError(f"lm_eval_tasks={lm_eval_tasks!r}: expected task names (a list of strings, or one "
                          f"comma-separated string), got {type(lm_eval_tasks).__name__}")
    if isinstance(data, str) and columns is not None:
        raise ConfigError(f"columns: names the columns of datasets; data is the task name {data!r}")
    if calibration is not None and base is None:
        raise ConfigError("calibration: warns when the calibration texts are in what a comparison evaluates; it "
                          "needs base= (one model's scores have no comparison)")


def _scored_with_answers(base, model, task: Task, tokenizer, batch_size: int, max_length: int, model_kind: str,
                         seed: int) -> dict:
    """Both models' scores (as ``_scores`` gives them, predictions kept) and the divergence along the base's
    own answers (``llm/answers.compare_answers``, the base's tokenizer), each model loaded once and its weights
    hashed once for both caches (``llm/cache.digests_kept``)."""
    from .llm.answers import compare_answers
    from .llm.cache import digests_kept

    loaded = {}
    for role, m in (("base", base), ("compressed", model)):
        kind = saved_kind(str(m), task, model_kind) if not is_in_memory(m) else \
            KINDS[kind_name_of(m)] if model_kind == "auto" else kind_for(task, None, model_kind)
        check_kind_fits(kind, task, m)
        loaded[role] = (kind, *kind.load_model(m, task, tokenizer=tokenizer))
    with digests_kept():
        results = {role: evaluate_loaded(m, tok, task, kind, batch_size, max_length, keep_predictions=True)
                   for role, (kind, m, tok) in loaded.items()}
        (_, base_model, tok), (_, compressed, _) = loaded["base"], loaded["compressed"]
        results["compressed"]["divergence"] = compare_answers(base_model.eval(), compressed.eval(), tok,
                                                              task.suite.divergence, batch_size, seed)
    return results


def evaluated_task(data, columns: dict | None, seed: int, data_dir=None, eval_size: int | None = None,
                   lm_eval_tasks=None, lm_eval_include=None, perplexity_windows: int | None = None,
                   divergence: dict | None = None) -> Task:
    """``evaluate``'s task: a task name built as ``forgetless compress --task`` builds it
    (``TaskConfig``, ``data.tasks.task_from_config``: the same items for the same seed), else
    ``as_task``'s (a ``Task``, datasets)."""
    if not isinstance(data, str):
        named = {"data_dir": data_dir, "lm_eval_tasks": lm_eval_tasks, "lm_eval_include": lm_eval_include,
                 "perplexity_windows": perplexity_windows}
        given = [name for name, value in named.items() if value is not None]
        given += [name for name, value in (divergence or {}).items() if value not in (None, 0)]
        if given:
            raise ConfigError(f"{', '.join(given)}: options of a task given by name; data is a "
                              f"{type(data).__name__}")
        task = as_task(data, columns, seed)
        return task if eval_size is None else cap_task(copy.copy(task), None, eval_size, seed)  # the caller's stays
    if isinstance(lm_eval_tasks, str):
        lm_eval_tasks = lm_eval_tasks.split(",")
    config = build(TaskConfig, {"name": data, "data_dir": None if data_dir is None else str(data_dir),
                                "eval_size": eval_size, "perplexity_windows": perplexity_windows,
                                "lm_eval_include": None if lm_eval_include is None else str(lm_eval_include),
                                "lm_eval_tasks": None if lm_eval_tasks is None else list(lm_eval_tasks),
                                **(divergence or {})}, "task")
    check_offline_tasks(config)  # before any data or model is read
    return task_from_config(config, seed)


def _scores(model, task: Task, tokenizer, batch_size: int, max_length: int, model_kind: str,
            keep_predictions: bool = False) -> dict:
    if not is_in_memory(model):  # its tokenizer is the one saved beside it (_check_evaluate_arguments)
        return evaluate_saved(str(model), task, batch_size=batch_size, max_length=max_length,
                              keep_predictions=keep_predictions, model_kind=model_kind)
    kind = KINDS[kind_name_of(model)] if model_kind == "auto" else kind_for(task, None, model_kind)
    return evaluate_model(model, task, kind, tokenizer, batch_size, max_length, keep_predictions)


def run_config(model, method, objective, task: Task, run_options: dict) -> RunConfig:
    """The ``RunConfig`` of the API's arguments: ``method`` / ``objective`` a name or a config,
    ``train`` / ``eval`` / ``speed`` / ``clever`` a config or a dict of its fields."""
    unknown = sorted(set(run_options) - set(RUN_OPTIONS))
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; compress accepts: {', '.join(RUN_OPTIONS)}")
    options = dict(run_options)
    if is_in_memory(model) and options.get("model_kind", "auto") == "auto":
        options["model_kind"] = kind_name_of(model)
    for name, cls in SECTIONS.items():  # train={"epochs": 1} as well as train=TrainConfig(epochs=1)
        if isinstance(options.get(name), dict):
            options[name] = build(cls, options[name], name)
    if options.get("scheme") is not None:  # the scheme's methods, as --scheme sets them
        if method is not None or options.get("then"):
            raise ConfigError(f"scheme={options['scheme']}: a scheme names its methods; give scheme alone, or "
                              "method= (and then=) without it")
        method, *options["then"] = scheme_methods(options["scheme"])
    if method is not None:
        options["method"] = METHODS.config(method)
    return RunConfig(model=label(model) if is_in_memory(model) else str(model),
                     objective=None if objective is None else OBJECTIVES.config(objective),
                     task=TaskConfig(name=task.name), **options)


def _check_model(model) -> None:
    """A name, a folder or a model object (its tokenizer: ``kinds.in_memory.find_tokenizer``)."""
    if not isinstance(model, (str, Path)):
        check_model_object(model, "any")


def as_task(data, columns: dict | None = None, seed: int = 0) -> Task:
    """A ``Task`` from a task name, a ``Task``, a ``DatasetDict`` or a dict of datasets."""
    if columns is not None and not isinstance(columns, dict):
        raise ConfigError(f"columns: expected a dict such as {{'text': 'sentence', 'label': 'label'}}, "
                          f"got {type(columns).__name__}")
    unknown = sorted(set(columns or {}) - set(COLUMNS))
    if unknown:
        raise ConfigError(f"columns: unknown key(s) {', '.join(unknown)}; valid: {', '.join(COLUMNS)}")
    if isinstance(data, Task):
        return data
    if isinstance(data, str):
        return load_task(data, seed=seed)
    if isinstance(data, dict):
        return Task.from_datasets(data, seed=seed, **(columns or {}))
    raise ConfigError(f"data: expected a task name, a forgetless Task, a datasets.DatasetDict or a dict of "
                      f"datasets.Dataset; got {type(data).__name__}")
