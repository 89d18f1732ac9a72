"""Everything a run is given is checked before the first file is written.

``check_run_output`` and ``validate_run`` are called at the very start of a run
(``pipeline.run_and_save``, ``pipeline.run``); every option's own range
was checked when its config was built (``options.Config``: ``--epochs nan``, ``--save-steps 0``,
``--max-length 100000`` are errors, not silent defaults or tracebacks). Here:

* **ranges against the model**: depth, head count and position limit are read from the model's
  ``config.json`` without loading weights (tiny models by name, ``minilm`` through its package) and
  given to each method config's ``check_model``, so ``--layers 100`` or ``--decoder-layers 100`` fail
  before a teacher is trained;
* **model folders**: ``models.checks.check_model_folder`` (config, complete safetensors, no pickle);
* **the output folder**: the rule of ``outputs.check_output``, and the output of a *different* run
  only with ``overwrite``; a rerun first moves the old report aside (``prepare_output``), so a
  folder never looks complete while the new run is still working.

Each problem is one ``ForgetlessError`` subclass with a one-line message naming the option, file
or row and what would be valid (the CLI turns it into exit code 2).
"""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict, is_dataclass
from pathlib import Path

import torch

from .arguments import check_device
from .data.llm_tasks import SUITES, check_generation_room, check_window, missing_calibration
from .data.task_kinds import task_kind
from .errors import ForgetlessError, OptionError, OutputFolderError
from .fsutil import json_digest
from .kinds import KINDS, check_compatible, kind_for
from .kinds.causal_lm import meta_model_of
from .kinds.in_memory import check_model_object
from .methods._shared.calibration import calibration_texts
from .models.checks import check_finite_weights, check_tokenizer_files, is_trained_classifier, weight_files
from .models.loading import check_label_order, model_config, resolve_model_path
from .models.io import check_saved_model
from .models.manifest import is_forgetless_folder, read_manifest
from .models.tiny import TINY_MODELS
from .offline import check_offline_tasks
from .outputs import check_cache, check_output, mark_output, read_mark
from .ranges import MAX_TOKENS

PREVIOUS = "previous-report"      # where a rerun moves the old report before it starts
REPORT_FILES = ("report.json", "report.md", "report.html")


# ----- the model's shape, from its config only (``models.loading.model_config``) ----------------------
def model_dims(name_or_path, seq2seq: bool = False) -> dict | None:
    """``{layers, decoder_layers, heads, max_positions, widths}`` of a model (``model_config``; an
    in-memory model: from its ``config``); None for a hub id. ``heads`` counts the prunable units:
    key/value groups under grouped-query attention (``models/decoder_only.py``)."""
    saved = isinstance(name_or_path, (str, os.PathLike))  # a name or folder; else a model object
    config = model_config(os.fspath(name_or_path)) if saved else name_or_path.config
    return None if config is None else _config_dims(config, seq2seq)


def _config_dims(config, seq2seq: bool) -> dict:
    if hasattr(getattr(config, "decoder", None), "to_dict"):  # an EncoderDecoderModel: a config per stack
        return {**_config_dims(config.encoder, False), "decoder_layers": _config_dims(config.decoder, False)["layers"]}
    get = lambda *names: next((getattr(config, n) for n in names if getattr(config, n, None)), None)  # noqa: E731
    layers = get("num_hidden_layers", "num_layers", "encoder_layers", "n_layers", "n_layer")
    decoder = get("num_decoder_layers", "decoder_layers")
    if decoder is None and (seq2seq or getattr(config, "is_encoder_decoder", False)):
        decoder = layers  # a BERT folder becomes a bert2bert encoder-decoder of the same depth
    heads = get("num_key_value_heads", "num_attention_heads", "num_heads", "encoder_attention_heads", "n_heads",
                "n_head")
    positions = get("max_position_embeddings", "n_positions")
    hidden = get("hidden_size", "d_model", "dim", "n_embd")
    inner = get("intermediate_size", "d_ff", "ffn_dim", "encoder_ffn_dim", "hidden_dim", "n_inner") or (
        4 * hidden if hidden and getattr(config, "model_type", "") == "gpt2" else None)
    query_heads = get("num_attention_heads", "num_heads", "encoder_attention_heads", "n_heads", "n_head")
    attention = query_heads * get("head_dim", "d_kv") if query_heads and get("head_dim", "d_kv") else hidden
    widths = sorted({w for w in (hidden, inner, attention) if w})  # input widths of the layers' linears
    return {"layers": layers, "decoder_layers": decoder, "heads": heads, "max_positions": positions, "widths": widths}


# ----- before the task's data and the model are read (issue 42) ------------------------------------------
def check_before_loading(config) -> None:
    """What an LLM run can check from its options and the model's ``config.json`` alone, before minutes
    of reading its tasks: task names whose data only the hub has while it is off
    (``offline.check_offline_tasks``), and each method's options against the model's widths (GPTQ's
    ``--group-size 128`` against SmolLM2's 576-wide layers). Other tasks read quickly: ``validate_run``
    checks them in its order."""
    if config.task.name not in SUITES:
        return
    check_offline_tasks(config.task)
    source = config.teacher if (config.teacher and config.student_init == "teacher") else config.model
    seq2seq = config.method.seq2seq_only or (config.model_kind != "auto" and KINDS[config.model_kind].seq2seq)
    _check_chain(config, model_dims(source, seq2seq), source, meta_model_of(source))


# ----- the whole run ----------------------------------------------------------------------------------
def validate_run(task, config, model=None) -> None:
    """Check a run (``method`` and ``objective`` resolved from ``config``) before any work: the
    model, teacher, options against the model's shape, calibration data, device. ``model``: a model
    object given instead of ``config.model``. What differs between model kinds, the kind checks
    (``kinds/base.py``); the output folder is ``check_run_output``'s."""
    if not config.teacher and model is None and config.base == "fine-tune":
        check_cache()  # the teacher is saved there: a file or a read-only folder fails now, not after training
    kind = kind_for(task, config.method, config.model_kind)
    check_compatible(task, config.method, config.objective, config.model_kind)
    for extra in config.then:
        check_compatible(task, extra, config.objective, config.model_kind)
    task_kind(task).check_run(task, config)  # the task kind's own checks (LLM suites: --base as-is, no recovery)
    if model is not None:
        check_model_object(model, kind.name, task)
    source = config.teacher if (config.teacher and config.student_init == "teacher") else config.model
    if config.teacher:
        model_dims(config.teacher, kind.seq2seq)  # the teacher folder must be a readable model
        _check_teacher_family(config.teacher, config.model)
        _check_teacher_labels(config.teacher, task, kind)
    kind.check_options(config)
    _check_model_folders(config, model, kind)
    _check_some_training(task, config)
    _check_device(config.train)
    _check_calibration_data(task, config)
    dims = model_dims(model if model is not None and source == config.model else source, kind.seq2seq)
    given = model if model is not None and source == config.model else None
    modules = None if dims is None else kind.known_modules(source, given)
    _check_chain(config, dims, source, modules)
    if dims is not None:
        limit = min(MAX_TOKENS, dims["max_positions"] or MAX_TOKENS)
        for flag, value in (("--max-length", config.train.max_length), ("--bench-seq-len", config.speed.seq_len)):
            if value > limit:
                raise OptionError(f"{flag} {value}: model {source!r} takes at most {limit} tokens; valid 8..{limit}")
        if task.suite is not None:  # an LLM suite: its requests, the passkey prompts in them, within the context
            check_window(task.suite, dims["max_positions"], source)
        prompts = getattr(task.suite, "divergence", None)  # --divergence-prompts: prompt + answer in the context
        if prompts is not None and dims["max_positions"] and prompts.max_new_tokens >= dims["max_positions"]:
            raise OptionError(f"--divergence-max-new-tokens {prompts.max_new_tokens}: model {source!r} takes at most "
                              f"{dims['max_positions']} tokens, its prompt included; give fewer")
        if task.suite is not None:  # each generation task's max_gen_toks leaves room for a prompt
            check_generation_room(task.suite, dims["max_positions"], source)
    kind.check_run(task, config, model, source)  # the model kind's own (a classifier as-is: a trained head)


def check_run_output(task, config, out_dir, overwrite: bool = False) -> str:
    """The output folder of a compress run, before any work: the rule of ``outputs.check_output``,
    and the output of a *different* run only with ``overwrite``; returns the run's key
    (``prepare_output`` records it when the run claims the folder, under its lock)."""
    check_output(out_dir, command="compress", inputs=run_inputs(task, config), overwrite=overwrite)
    key = run_key(task, config)
    _check_same_run(out_dir, key, overwrite)
    return key


def _check_chain(config, dims: dict | None, source, modules=None) -> None:
    """``--method`` and each ``--then`` method in turn (``check_chain``), against ``modules`` where the model is
    known module by module (``check_modules``: its widths replace the config's, which miss the experts')."""
    chain = [config.method, *config.then]
    check_chain(chain, dims, f"model {source!r}", module_checked=0 if modules is None else module_checked(chain))
    check_modules(chain, modules, scheme=config.scheme)


def module_checked(chain: list) -> int:
    """How many methods of ``chain`` ``check_modules`` checks against the model's modules: up to and including
    the first that removes weights (the model it leaves is not the one whose modules are known)."""
    return next((i + 1 for i, item in enumerate(chain) if item.structured), len(chain))


def check_chain(chain: list, dims: dict | None, model: str, listed: bool = False, module_checked: int = 0) -> None:
    """Each method of ``chain`` in turn against the model the previous ones leave
    (``MethodConfig.shape_after``): ``--then truncate:layers=2`` after ``--layers 2`` is an error now,
    not after training; nothing follows a method that leaves quantized weights. ``model`` names the
    model the first method gets; ``listed``: the chain is one list (``forgetless.apply(model, [...])``),
    named as ``methods``; the first ``module_checked`` methods check their widths against the modules
    (``check_modules``: the config's widths miss a mixture-of-experts model's experts), the others against
    the widths the config gives, as the methods before them leave them."""
    names = ",".join(c.name for c in chain)
    for i, item in enumerate(chain):
        where = model if i == 0 else f"the model after {' and '.join(c.name for c in chain[:i])}"
        quantized = next((c.name for c in chain[:i] if c.quantizes), None)
        if quantized:
            culprit = f"--methods {names}: {item.name}" if listed else f"--then {item.name}:"
            raise OptionError(f"{culprit} comes after {quantized}, which leaves quantized weights that "
                              f"{item.name} cannot compress; put the quantizing method last")
        if dims is None:
            continue
        try:
            item.check_model(dims if i >= module_checked else {**dims, "widths": None}, where)
        except OptionError as exc:
            raise OptionError(exc.args[0] if i == 0 or listed else then_flags(item.name, exc.args[0])) from None
        dims = item.shape_after(dims)


def check_modules(chain: list, model, listed: bool = False, scheme: str | None = None) -> None:
    """Each method of ``chain`` checks its options against the modules of ``model`` (``check_fits``:
    ``targets`` / ``ignore``, every chosen linear's width, the experts of a mixture-of-experts included, the
    format against their kinds) before any work, in ``--then``'s order up to the first method that removes
    weights (the model it leaves is not ``model``). ``model``: the model object, or ``meta_model_of`` a
    name or folder (None: nothing to check before loading; each method checks again when it runs).
    ``listed``: the chain is one list (``forgetless.apply``), its methods' options named as given;
    ``scheme``: the ``--scheme`` that chose the methods, named first in the error."""
    from .registry import METHODS

    if model is None:
        return
    meta = any(p.is_meta for p in model.parameters())
    for i, item in enumerate(chain):
        try:
            METHODS.build(item).check_fits(model)
        except OptionError as exc:
            raise OptionError(_as_given(item.name, exc.args[0], i == 0 or listed, scheme)) from None
        except ForgetlessError:
            raise
        except Exception:  # noqa: BLE001 - a family whose meta build the checks cannot walk: they run on the weights
            if not meta:
                raise
            return
        if item.structured:
            return


def _as_given(name: str, message: str, first: bool, scheme: str | None) -> str:
    """A method's error named as the user gave its options: its own flags (the first method, or a list),
    ``--then name:option=value``, or under the ``--scheme`` that chose it (``--scheme W8A8-INT8:
    gptq:activations=int8-token: …``)."""
    if scheme:
        return f"--scheme {scheme}: {then_flags(name, message).removeprefix('--then ')}"
    return message if first else then_flags(name, message)


def then_flags(name: str, message: str) -> str:
    """A ``--then`` method's error names the option as it was given there: ``--layers 1: …`` →
    ``--then truncate:layers=1: …``."""
    match = re.match(r"--([a-z0-9-]+) (\S+)( \(the default\))?: ", message)
    if match is None:
        return f"--then {name}: {message}"
    option, value, default = match.group(1).replace("-", "_"), match.group(2), match.group(3) or ""
    return f"--then {name}:{option}={value}{default}: {message[match.end():]}"


def _check_model_folders(config, model, kind) -> None:
    """Every model the run loads fits its kind (``kind.check_config``: a causal LM is decoder-only), and a
    local folder holds its tokenizer, finite weights and what the kind needs (``kind.check_folder``: a trained
    classifier's head)."""
    loaded = [config.teacher] if config.teacher else []
    if model is None and (not config.teacher or config.student_init == "pretrained"):
        loaded.append(config.model)
    for name in loaded:
        found = model_config(name)
        kind.check_config(name, found)
        path = Path(resolve_model_path(name)).expanduser() if name not in TINY_MODELS else None
        if path is None or not path.is_dir():
            continue  # a built-in tiny model or a hub id
        check_tokenizer_files(path)
        if is_forgetless_folder(path):
            check_saved_model(path)  # its manifest fits its config (meta device: nothing loaded)
        else:
            kind.check_folder(path, found)
        check_finite_weights(weight_files(path))  # NaN / inf weights: one line now, not after the first stage


def _check_calibration_data(task, config) -> None:
    """``--calibration-data`` is read by a method that calibrates on text (on an LLM task, whose training
    split is text, also by one that scores the model on the task: heads, block-influence), holds text,
    and is the one source of an LLM task's calibration texts (not beside ``--train``); an LLM task
    without calibration texts runs only methods that read none."""
    chain = (config.method, *config.then)
    llm = task_kind(task).calibration_only  # an LLM task: its training split is calibration text
    if not config.calibration_data:
        readers = [item for item in chain if item.calibration != "none"]
        if llm and not len(task.train) and readers:
            raise OptionError(_reads_text(readers[0]) + missing_calibration(task))
        return
    if not any(item.calibration == "text" or (llm and item.calibration == "task") for item in chain):
        raise OptionError(f"--calibration-data: no method of this run calibrates on text "
                          f"({', '.join(item.name for item in chain)}); forgetless list names those that do")
    if task_kind(task).calibration_only and config.task.train_file:
        raise OptionError(f"--calibration-data {config.calibration_data} and --train {config.task.train_file}: both "
                          f"name the calibration texts of task {task.name}; give one")
    calibration_texts(config.calibration_data, config.task.data_dir, "--calibration-data")


def _reads_text(method) -> str:
    """Why ``method`` reads an LLM task's calibration text, where its name alone does not say it."""
    if type(method).calibration != method.calibration and getattr(method, "bits_budget", 0):
        return f"--bits-budget {method.bits_budget:g}: measures {method.name}'s units on calibration text; "
    if type(method).calibration != method.calibration:  # rtn reads text only to rank its units
        return f"--sensitivity {method.sensitivity}: ranks {method.name}'s quantized units on calibration text; "
    if method.calibration == "task":
        return (f"--method {method.name}: scores the model on the task's training split, an LLM task's calibration "
                "text; ")
    return ""


def _check_device(train) -> None:
    """``--device cuda`` and ``--fp16`` need a CUDA GPU: one error before any work, not a Trainer traceback."""
    if train.device == "cuda":
        check_device(train.device)
    if train.fp16 and not torch.cuda.is_available():
        raise OptionError("--fp16: no CUDA GPU is available here; train on CPU (--device cpu, or --bf16 for mixed "
                          "precision)")


def run_inputs(task, config) -> dict:
    """Every path a run reads (the output rule protects them): model, teacher, data files, cache."""
    inputs = {"--model": config.model, "--teacher": config.teacher, "cache_dir": config.cache_dir}
    for name, example_set in {"train": task.train, **task.eval_sets()}.items():
        source = str(getattr(example_set, "source", "") or "")
        if source and not Path(source).exists():
            source = source.rsplit(":", 1)[0]  # FILE:KEY of a JSON file
        inputs[f"the {name} file"] = source or None
    return inputs


def _check_some_training(task, config) -> None:
    """``--epochs`` so small that it is less than one optimisation step would still train one full
    step while the card records the tiny number: an error instead."""
    for flag, train in (("--epochs", config.train), ("--teacher-epochs", config.teacher_train)):
        batches = max(1, -(-len(task.train) // max(1, train.batch_size))) if train is not None else 1
        if train is not None and train.max_steps <= 0 and train.epochs * batches < 1:
            raise OptionError(f"{flag} {train.epochs:g}: less than one training step ({len(task.train)} "
                              f"examples in batches of {train.batch_size}: {batches} step(s) per epoch); "
                              f"give at least {1 / batches:.3g}")


def model_type_of(name: str) -> str | None:
    """``model_type`` of a model name or folder, from its config only (None: a hub id)."""
    config = model_config(name)
    return None if config is None else config.model_type


def _check_teacher_family(teacher: str, model: str) -> None:
    """``--teacher`` is the fine-tuned ``--model``: the same family, and not quantized (int8 layers
    cannot be trained or pruned again)."""
    teacher_type, model_type = model_type_of(teacher), model_type_of(model)
    if teacher_type and model_type and teacher_type != model_type:
        raise OptionError(f"--teacher {teacher}: is a {teacher_type} model, --model {model} a {model_type}; the "
                          "teacher must be --model fine-tuned (pass the teacher's base model as --model)")
    if is_forgetless_folder(teacher) and read_manifest(teacher).get("quantization"):
        raise OptionError(f"--teacher {teacher}: is a quantized model; give the model before quantization")


def _check_teacher_labels(teacher: str, task, kind) -> None:
    """A trained classifier given as ``--teacher`` predicts the task's labels, in the same order."""
    config = model_config(teacher)
    if kind.seq2seq or not task.label_names or config is None or not is_trained_classifier(config):
        return
    check_label_order(config, task.label_names, teacher, where=f"--teacher {teacher}:", error=OptionError)


def run_key(task, config) -> str:
    """What makes two runs the same: the resolved configuration (progress bars aside) and the data."""
    data = run_identity(config)
    data["task"] = {"name": task.name, "kind": task.kind, "labels": list(task.label_names or []),
                    "sets": {name: s.fingerprint() for name, s in {"train": task.train, **task.eval_sets()}.items()}}
    return json_digest(data)[:20]


def run_identity(config) -> dict:
    """A run's settings as JSON, without what does not change its result (progress bars, checkpoint
    cadence, logging): recorded in ``forgetless-run.json`` and hashed by both run keys."""
    data = asdict(config) if is_dataclass(config) else dict(config)
    data.pop("progress", None)
    if is_dataclass(config) and hasattr(config, "train"):
        data["train"] = config.train.identity()  # checkpoint cadence and logging are not the run's identity
    return json.loads(json.dumps(data, sort_keys=True, default=str))


# ----- the output folder -------------------------------------------------------------------------------
def prepare_output(out, key: str, overwrite: bool = False, config: dict | None = None,
                   inputs: dict | None = None) -> Path:
    """Claim ``out`` for the compress run ``key`` (``outputs.check_output``; the caller holds
    ``outputs.output_lock``): a folder of the same run resumes, one of another run needs
    ``overwrite``; an old report is moved aside; the run is recorded."""
    path = check_output(out, command="compress", inputs=inputs, overwrite=overwrite)
    _check_same_run(path, key, overwrite)
    if path.is_dir():
        _move_report_aside(path)
    mark_output(path, "compress", key=key, config=config or {})
    return path


def _check_same_run(out, key: str, overwrite: bool) -> None:
    stored = read_mark(Path(out)) if Path(out).is_dir() else None
    if stored is not None and stored.get("key") != key and not overwrite:
        raise OutputFolderError(f"--out {out}: holds the output of a different run (other settings or data); "
                                "choose another folder or pass --overwrite to replace it")


def _move_report_aside(path: Path) -> None:
    """Old report files go to ``OUT/previous-report/`` before the new run starts."""
    present = [name for name in REPORT_FILES if (path / name).exists()]
    if not present:
        return
    aside = path / PREVIOUS
    shutil.rmtree(aside, ignore_errors=True)
    aside.mkdir()
    for name in present:
        os.replace(path / name, aside / name)
