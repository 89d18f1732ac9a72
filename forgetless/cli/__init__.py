"""The ``forgetless`` command: one parser, one option vocabulary (``options.py``), subcommands that
are thin wrappers over Python functions (``commands.py``). Every method — encoder pruning, NASH
and CoFi for encoder-decoders — runs through ``forgetless compress``."""
from __future__ import annotations

import errno
import logging
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


def main(argv: list[str] | None = None) -> int:
    parser, owners = build_parser()
    owners = {**owners, "schema": recipe_schema(parser, owners)}
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    if not args.verbose:
        import transformers

        transformers.logging.set_verbosity_error()
    try:
        check_cli_args(args)
    except ForgetlessError as exc:
        print(f"forgetless: error: {exc}", file=sys.stderr)
        return 2
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
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        print(f"forgetless: error: disk full writing {exc.filename or getattr(args, 'out', '')} ({exc.strerror}); "
              "free some space and rerun the same command (it resumes)", file=sys.stderr)
        return 2


__all__ = ["main", "build_parser", "parse_bool", "load_recipe", "run_recipe", "recipe_schema"]
