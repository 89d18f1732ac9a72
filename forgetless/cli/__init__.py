"""The ``forgetless`` command: one parser, one option vocabulary (``options.py``), subcommands that
are thin wrappers over Python functions (``commands.py``). Every method — encoder pruning, NASH
and CoFi for encoder-decoders — runs through ``forgetless compress``."""
from __future__ import annotations

import logging
import os
import sys

from ..errors import ForgetlessError
from ..validate import check_cli_args
from . import commands
from .export import cmd_export
from .options import parse_bool
from .parser import DEMO_OUT, build_parser  # noqa: F401  (DEMO_OUT: the demo's folder)
from .recipe import cmd_recipes, cmd_run

COMMANDS = {"compress": commands.cmd_compress, "compress-seq2seq": commands.cmd_compress,
            "demo": commands.cmd_compress, "finetune": commands.cmd_finetune, "evaluate": commands.cmd_evaluate,
            "bench": commands.cmd_bench, "list": commands.cmd_list, "sweep": commands.cmd_sweep,
            "profile": commands.cmd_profile, "run": cmd_run, "recipes": cmd_recipes, "export": cmd_export}


def recipe_schema(parser=None, owners=None):
    """``schema(command)`` for recipe files: the options of a subcommand of this parser."""
    from ..recipes import schema_from_parser

    if parser is None:
        parser, owners = build_parser()
    return lambda command: schema_from_parser(parser, owners, command)


def load_recipe(path, scale: str | None = None, sets=()) -> dict:
    """A validated recipe file (see ``forgetless.recipes``) at ``scale`` with ``sets`` overrides."""
    from ..recipes import load_recipe as load

    return load(path, recipe_schema(), scale, sets)


def run_recipe(path, scale: str | None = None, sets=(), out: str | None = None, check: bool = False,
               data_dir: str | None = None):
    """``forgetless run`` from Python: (resolved recipe, report card / sweep summary / None)."""
    from .recipe import run_recipe as run

    return run(path, scale, sets, out, check, recipe_schema(), data_dir=data_dir)


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


def main(argv: list[str] | None = None) -> int:
    parser, owners = build_parser()
    owners = {**owners, "schema": recipe_schema(parser, owners)}
    args = parser.parse_args(join_negative_values(list(sys.argv[1:] if argv is None else argv)))
    try:
        check_cli_args(args)  # before torch / transformers are imported: a bad option answers at once
    except ForgetlessError as exc:
        print(f"forgetless: error: {exc}", file=sys.stderr)
        return 2
    stdin = sys.stdin
    with open(os.devnull) as sys.stdin:  # nothing may prompt (transformers' "run the custom code? [y/N]")
        try:
            return _run(args, owners)
        finally:
            sys.stdin = stdin


def _run(args, owners) -> int:
    from ..models.checks import allow_remote_code

    allow_remote_code(getattr(args, "trust_remote_code", False))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not args.verbose:
        import transformers

        transformers.logging.set_verbosity_error()
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    if args.command == "sweep":
        owners = {**owners, "method": owners["sweep_method"]}
    try:
        return COMMANDS[args.command](args, owners)
    except ForgetlessError as exc:
        print(f"forgetless: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a full disk anywhere else (a plot, a log) is still one line
        from ..fsutil import free_space, is_disk_full

        if not is_disk_full(exc):
            raise
        where = getattr(exc, "filename", None) or getattr(args, "out", None) or getattr(args, "json", None) or "."
        print(f"forgetless: error: disk full while writing {where} ({free_space(where)} free); free some space and "
              "rerun the same command (it resumes)", file=sys.stderr)
        return 2


__all__ = ["main", "build_parser", "parse_bool", "load_recipe", "run_recipe", "recipe_schema"]
