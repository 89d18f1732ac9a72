"""Errors raised by forgetless: one class per kind of problem, each with a message a user can act on.

A message names the culprit as the command line spells it (``--out '': …``, ``--layers 100: …``);
read from Python (``str(error)``) it names it as Python does (``out_dir='': …``, ``layers=100: …``):
``python_names`` is the one translation, and ``command_line()`` (entered by ``forgetless.cli.main``)
keeps the flags for the errors a command prints.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Iterator

_AUDIENCE = contextvars.ContextVar("forgetless_error_audience", default="python")

# flag (without dashes) → its Python name; every option of the config tree is added by
# ``options.Config`` (``--lr`` → ``learning_rate``, ``--objective-lam`` → ``lam``); these are the
# command's own flags and the names Python spells otherwise (``load_task(train=, dev=)``)
_NAMES = {"out": "out_dir", "json": "out", "task": "task", "train": "train", "dev": "dev",
          "eval-batch-size": "eval.batch_size", "speed": "speed.mode", "bench-batch-size": "speed.batch_size", "bench-seq-len": "speed.seq_len",
          "bench-repeats": "speed.repeats", "bench-new-tokens": "speed.new_tokens", "clever-examples": "clever.examples",
          "clever-batches": "clever.batches", "clever-samples": "clever.samples", "clever-radius": "clever.radius",
          "clever-norm": "clever.norm"}
_SWITCHES = {"overwrite": "overwrite=True", "trust-remote-code": "forgetless.allow_remote_code(True)",
             "clever": "clever.enabled=True"}
_FLAG = re.compile(r"(?<![\w/.~-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)(: | (?=\S))?")
_PROSE = {"and", "or", "to", "the", "a", "an", "is", "are", "be", "must", "needs", "does", "with", "for", "of", "in",
          "on", "at", "as", "names", "holds", "applies", "cannot", "instead", "only", "first", "after", "before",
          "was", "has", "both", "not", "nor"}  # words after a flag that are not its value


def name_flag(flag: str, python: str, switch: bool = False) -> None:
    """Record how Python names the flag ``--flag`` (``switch``: a flag without a value, ``python``
    then is the assignment, ``progress=False``); unrecorded flags are named by the rule
    ``--train-size`` → ``train_size``."""
    (_SWITCHES if switch else _NAMES).setdefault(flag, python)


def python_names(message: str) -> str:
    """``message`` with every flag written as Python names it: ``--out '': …`` → ``out_dir='': …``,
    ``--epochs: …`` → ``epochs: …``, ``--overwrite`` → ``overwrite=True``. Text in backticks is a
    command to type (`pip install --no-deps …`) and stays as it is."""
    def name(match: re.Match) -> str:
        flag, after = match.group(1), match.group(2) or ""
        if flag in _SWITCHES:
            return _SWITCHES[flag] + after
        python = _NAMES.get(flag, flag.replace("-", "_"))
        following = match.string[match.end():].split(" ", 1)[0]
        if after == " " and following.lower() not in _PROSE:
            return python + "="  # --layers 100 → layers=100
        return python + after  # --epochs: …, --kd-weight and …, (--model-kind)

    parts = message.split("`")
    return "`".join(part if i % 2 else _FLAG.sub(name, part) for i, part in enumerate(parts))


@contextlib.contextmanager
def command_line() -> Iterator[None]:
    """Inside, errors speak the command line's language (flags); elsewhere Python's."""
    token = _AUDIENCE.set("command line")
    try:
        yield
    finally:
        _AUDIENCE.reset(token)


class ForgetlessError(Exception):
    """Base class: every error forgetless raises on purpose. The message is written with flags;
    ``str()`` gives it in the caller's language (module docstring)."""

    def __str__(self) -> str:
        message = super().__str__()
        return message if _AUDIENCE.get() == "command line" else python_names(message)


class DataError(ForgetlessError):
    """Bad input data: unreadable file, missing column, unknown label, empty set."""


class ConfigError(ForgetlessError):
    """Unknown method / objective / option name, or an option value out of range."""


class UnsupportedModelError(ForgetlessError):
    """The model's architecture has no adapter, or the operation is not possible for it."""


class OptionError(ConfigError):
    """An option value that is not allowed: NaN / infinite / out of range, or beyond what the model
    has (``--layers 100`` for a 6-layer model). The message names the option and the valid range."""


class OutputFolderError(ForgetlessError):
    """The output folder cannot be used: empty name, an existing file, inside a file, read-only, or
    the output of a different run (pass ``--overwrite`` to replace it)."""


class ModelFileError(ForgetlessError):
    """A model folder that cannot be read safely: pickle-only weights, corrupt or truncated
    safetensors, a manifest whose shapes do not match the weights, or no model at all."""


class DiskFullError(ForgetlessError):
    """The disk filled up while writing (a checkpoint, the model, the report); rerun after freeing
    space: training resumes from the last complete checkpoint."""


class MemoryTooSmallError(ForgetlessError):
    """A model that cannot be compressed in this machine's memory (``models/memory_fit.py``): stream it."""
