"""The ``forgetless`` command: one parser generated from the config tree (``parser.py``; a flag is a
config field is a recipe key) and a table of subcommands, each a thin wrapper over Python functions
of the package, grouped by what they import: ``info.py`` (list, recipes), ``pages.py`` (report,
compare: plots), ``models.py`` (finetune, evaluate, bench, export), ``serving.py`` (serve-check), ``jobs.py`` (compress, demo,
sweep, profile) and ``recipe.py`` (run). A command's module is imported when the command runs, so ``--help``, ``list``
and a bad option answer without importing torch. Every method — encoder pruning, NASH and CoFi for
encoder-decoders, one-shot LLM pruning and quantization — runs through ``forgetless compress``."""
from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
from typing import Iterator

from ..errors import ForgetlessError, OutputFolderError, command_line
from ..fsutil import free_space, is_disk_full
from ..ranges import MAX_OPSET, check_number
from ..registry import METHODS, OBJECTIVES
from .parser import DEMO_OUT, build_parser, config_from_args  # noqa: F401  (DEMO_OUT: the demo's folder)

# command → "module:function" of this package, imported when the command runs
COMMANDS = {"compress": "jobs:cmd_compress", "compress-seq2seq": "jobs:cmd_compress", "demo": "jobs:cmd_compress",
            "sweep": "jobs:cmd_sweep", "profile": "jobs:cmd_profile", "run": "recipe:cmd_run",
            "finetune": "models:cmd_finetune", "evaluate": "models:cmd_evaluate", "bench": "models:cmd_bench",
            "export": "models:cmd_export", "serve-check": "serving:cmd_serve_check", "list": "info:cmd_list", "recipes": "info:cmd_recipes",
            "schema": "info:cmd_schema",
            "report": "pages:cmd_report", "compare": "pages:cmd_compare"}
RESUMABLE = ("compress", "compress-seq2seq", "demo", "finetune", "sweep", "run")  # checkpoints: a rerun resumes
MAX_THREADS = 1024
COMMAND_OPTIONS = {"threads": (1, MAX_THREADS), "batch_size": (1, 1_000_000), "seq_len": (2, 8192),
                   "repeats": (1, 10_000), "opset": (18, MAX_OPSET)}  # options of commands outside the config tree


def check_command_options(args) -> None:
    """Options of a command that are not in the config tree (``--threads``, ``bench``, ``export``)."""
    for dest, (low, high) in COMMAND_OPTIONS.items():
        value = getattr(args, dest, None)
        if isinstance(value, int):
            check_number("--" + dest.replace("_", "-"), value, low, high, integer=True)
    if getattr(args, "atol", None) is not None:
        check_number("--atol", args.atol, 0, None)
    for dest in ("out", "json"):
        if getattr(args, dest, None) is not None and not str(getattr(args, dest)).strip():
            raise OutputFolderError(f"--{dest} '': name a path (an empty name would write into the current folder)")


def join_negative_values(argv: list[str]) -> list[str]:
    """``--lr -1e-4`` → ``--lr=-1e-4``: argparse reads a negative number in exponent form as an
    option, so the range check (which names the flag) would never see it."""
    out: list[str] = []
    for token in argv:
        previous = out[-1] if out else ""
        if previous.startswith("--") and "=" not in previous and _is_number(token) and token.startswith("-"):
            out[-1] = f"{previous}={token}"
        else:
            out.append(token)
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def help_choices(argv: list[str]) -> dict[str, str] | None:
    """``--help`` with ``--method NAME`` (and ``--objective NAME``): the method and objective whose
    options the help shows (the objective: the given one, else the method's default), the others
    left out; None (every option) for other command lines or a name that is not registered."""
    if not {"-h", "--help"} & set(argv):
        return None
    given = {}
    for i, token in enumerate(argv):
        for role in ("method", "objective"):
            if token == f"--{role}" and i + 1 < len(argv):
                given[role] = argv[i + 1]
            elif token.startswith(f"--{role}="):
                given[role] = token.split("=", 1)[1]
    if given.get("method") not in METHODS.names() or given.setdefault(
            "objective", METHODS.config_class(given["method"]).default_objective) not in OBJECTIVES.names():
        return None
    return given


def main(argv: list[str] | None = None) -> int:
    with command_line():  # errors name the flags, not the Python names
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    argv = join_negative_values(list(sys.argv[1:] if argv is None else argv))
    args = build_parser(help_choices(argv)).parse_args(argv)
    try:  # every option checked before torch / transformers are imported: a bad one answers at once
        check_command_options(args)
        config = config_from_args(args)
    except ForgetlessError as exc:
        print(f"forgetless: error: {exc}", file=sys.stderr)
        return 2
    stdin = sys.stdin
    previous = signal.signal(signal.SIGTERM, _interrupt)  # a scheduler's kill stops like Ctrl-C
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # no fork warning from the tokenizers library
    # torch's OpenMP threads sleep at the end of a parallel region instead of spinning (libgomp spins ~300,000
    # rounds first): where other jobs share the cores, a spinning thread burns the core its partner waits for;
    # a SmolLM2 forward took 2× the CPU and the wall time (docs/speed.md). Read when torch loads: set before.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # nothing may prompt (transformers' "run the custom code? [y/N]"), nor a child process print to the terminal
    with open(os.devnull) as sys.stdin, quiet_children(not getattr(args, "verbose", False)):
        try:
            return _run(args, config)
        except KeyboardInterrupt:
            hint = "rerun the same command to resume from the last complete checkpoint" \
                if args.command in RESUMABLE else "outputs are written atomically: nothing is half-written"
            print(f"\nforgetless: interrupted; {hint}", file=sys.stderr)
            return 130
        except BrokenPipeError:  # `forgetless recipes | head`: the reader left; say nothing more
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout at exit
            return 0
        finally:
            sys.stdin = stdin
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def quiet_children(enabled: bool = True) -> Iterator[None]:
    """Inside, what child processes and native code write to file descriptor 2 is dropped (lm-eval's
    ``git describe`` prints "fatal: not a git repository" outside a repository), while Python's own
    ``sys.stderr`` (errors, stage lines, progress bars) still reaches the terminal through a copy of
    the descriptor. Nothing changes when not ``enabled`` (``--verbose``) or when ``sys.stderr`` is not
    descriptor 2 (a test capturing it)."""
    try:
        own = sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):
        own = False
    if not (own and enabled):
        yield
        return
    sys.stderr.flush()
    terminal = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    stderr = sys.stderr
    sys.stderr = open(terminal, "w", buffering=1, encoding=stderr.encoding, errors=stderr.errors,  # noqa: SIM115
                      closefd=False)
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stderr = stderr
        os.dup2(terminal, 2)
        os.close(terminal)


def _run(args, config) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if hasattr(args, "trust_remote_code") or getattr(args, "threads", None):  # a command that loads models
        import torch  # heavy: only for the commands that load a model (not `list` / `recipes` / `--help`)
        import transformers

        from ..models.checks import allow_remote_code  # the models package imports torch

        allow_remote_code(args.trust_remote_code)
        if not args.verbose:
            transformers.logging.set_verbosity_error()
        if getattr(args, "threads", None):
            torch.set_num_threads(args.threads)
    module, _, function = COMMANDS[args.command].partition(":")
    try:
        with _library_bars(args):
            return getattr(importlib.import_module(f"{__name__}.{module}"), function)(args, config)
    except ForgetlessError as exc:
        print(f"forgetless: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a full disk anywhere else (a plot, a log) is still one line
        if not is_disk_full(exc):
            raise
        where = getattr(exc, "filename", None) or getattr(args, "out", None) or getattr(args, "json", None) or "."
        print(f"forgetless: error: disk full while writing {where} ({free_space(where)} free); free some space and "
              "rerun the same command (it resumes)", file=sys.stderr)
        return 2


@contextlib.contextmanager
def _library_bars(args) -> Iterator[None]:
    """transformers' own bars ("Loading weights") off while a command that loads models runs (its stage
    lines say it), unless ``--verbose``; as they were afterwards (``main`` may run inside a process)."""
    if not hasattr(args, "trust_remote_code") or args.verbose:
        yield
        return
    from ..training.logs import progress_bars_off  # imports transformers: only for a command that loads models

    with progress_bars_off():
        yield


def __getattr__(name: str):
    """``forgetless.cli.run_recipe`` (``forgetless run`` from Python), imported on first use: the
    recipe reader (YAML) is not needed for ``--help``."""
    if name == "run_recipe":
        return importlib.import_module(f"{__name__}.recipe").run_recipe
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["main", "build_parser", "config_from_args", "run_recipe"]
