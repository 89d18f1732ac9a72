"""The ``forgetless`` command: one parser, one option vocabulary (``options.py``), subcommands that
are thin wrappers over Python functions (``commands.py``). Every method — encoder pruning, NASH
and CoFi for encoder-decoders — runs through ``forgetless compress``."""
from __future__ import annotations

import argparse
import logging
import sys

from ..errors import ForgetlessError
from . import commands
from .recipe import cmd_run
from .options import add_config_options, add_eval_options, add_task_options, add_train_options, parse_bool

DEMO_OUT = "forgetless-out/demo"
EXAMPLES = {
    "compress": "examples:\n  forgetless compress --method magnitude --sparsity 0.4 --out runs/mag40\n"
                "  forgetless compress --method nash --model tiny-t5 --task synthetic-lookup --decoder-layers 2 "
                "--train-size 64 --eval-size 32 --epochs 1 --out runs/nash",
    "demo": "example:\n  forgetless demo --method heads --ratio 0.3",
    "sweep": "example:\n  forgetless sweep --objectives ce,rmc --levels 0.2,0.4 --seeds 0,1 --out runs/table7\n"
             "  forgetless sweep --method nash --model tiny-t5 --task synthetic-lookup --objectives nash-distil "
             "--level-option decoder_layers --levels 1,2,3 --out runs/nash-depth",
}


def _compress_options(sub, name: str, help_text: str, owners: dict):
    from ..methods import METHODS
    from ..objectives import OBJECTIVES

    p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES.get(name),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_task_options(p)
    add_train_options(p)
    g = p.add_argument_group("compression")
    g.add_argument("--method", default="truncate", help=f"one of: {', '.join(METHODS.names())} (default truncate)")
    g.add_argument("--objective", help=f"training objective: {', '.join(OBJECTIVES.names())} (default: the method's: "
                                       "ce; nash-distil for nash and cofi)")
    g.add_argument("--teacher", help="a saved fine-tuned model to use as teacher / base instead of fine-tuning "
                                     "(read only)")
    g.add_argument("--teacher-epochs", type=float, help="epochs for the teacher (default: --epochs)")
    g.add_argument("--student-init", choices=["teacher", "pretrained"], default="teacher",
                   help="start the compressed model from the fine-tuned teacher or from the pretrained model")
    g.add_argument("--out", default="forgetless-out/run", help="output folder (model/, report.json, report.md)")
    add_eval_options(p)
    b = p.add_argument_group("speed benchmark")
    b.add_argument("--bench-batch-size", type=int, default=32, help="throughput batch size")
    b.add_argument("--bench-seq-len", type=int, default=128, help="input length of the timed batches")
    b.add_argument("--bench-repeats", type=int, default=5, help="interleaved repeats (median reported)")
    b.add_argument("--bench-new-tokens", type=int, default=16, help="generation: tokens decoded per timed call")
    r = p.add_argument_group("robustness")
    r.add_argument("--clever", action="store_true", help="add CLEVER estimates (Weng et al. 2018) of both models on a "
                                                         "fixed dev subset (always on for --method rahp)")
    r.add_argument("--clever-examples", type=int, default=64, help="size of the CLEVER evaluation subset")
    r.add_argument("--clever-batches", type=int, default=20, help="batch maxima for the reverse-Weibull fit")
    r.add_argument("--clever-samples", type=int, default=16, help="points sampled per batch")
    r.add_argument("--clever-radius", type=float, default=2.0, help="ℓ2 ball radius in embedding units")
    owners["method"] = add_config_options(p, METHODS, "", "method options")
    owners["objective"] = add_config_options(p, OBJECTIVES, "objective-", "objective options")
    return p


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    from ..methods import METHODS

    parser = argparse.ArgumentParser(
        prog="forgetless",
        description="Compress transformer models and report what compression cost: accuracy on in-distribution "
                    "and challenge sets, relative bias (F_bias), hard vs easy accuracy, generation quality, size "
                    "and measured speedup.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log library messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    owners: dict = {}
    _compress_options(sub, "compress", "fine-tune a teacher, compress it with a method, evaluate both, report", owners)
    for alias in ("compress-seq2seq",):  # kept for old scripts: the same command
        _compress_options(sub, alias, "alias of `compress` (every method, encoder-decoders included)", owners)
    demo = _compress_options(sub, "demo", "the main job on the built-in synthetic task: fine-tune the bundled MiniLM, "
                                          "compress it (drop half the layers), evaluate, benchmark, report", owners)
    demo.set_defaults(out=DEMO_OUT, epochs=2.0, lr=1e-4, train_size=1500, method="truncate")

    p = sub.add_parser("finetune", help="fine-tune a model on a task and save it (works under `accelerate launch`)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_task_options(p)
    add_train_options(p)
    p.add_argument("--out", default="forgetless-out/finetune", help="output folder (checkpoints/, model/)")

    p = sub.add_parser("evaluate", help="scores of a saved model on every set of a task",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("model_path", help="a forgetless model folder (or any HF folder)")
    add_task_options(p)
    p.add_argument("--seed", type=int, default=0, help="seed of data splits and caps")
    p.add_argument("--max-length", type=int, default=128, help="max input tokens per example")
    p.add_argument("--json", help="also write the metrics to this JSON file")

    p = sub.add_parser("bench", help="inference speed of a saved compressed model vs its base model",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("model_path", help="the compressed model (forgetless folder)")
    p.add_argument("--base", default="minilm", help="the uncompressed model")
    p.add_argument("--batch-size", type=int, default=32, help="throughput batch size")
    p.add_argument("--seq-len", type=int, default=128, help="input length")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats (median reported)")

    p = sub.add_parser("sweep", help="one configuration over objectives × levels of a method option × seeds: "
                                     "mean ± std per set, F_bias, hard/easy, plots (Du et al. Table 7, Figures 1, 3)",
                       epilog=EXAMPLES["sweep"], formatter_class=argparse.RawDescriptionHelpFormatter)
    add_task_options(p)
    add_train_options(p)
    add_eval_options(p)
    g = p.add_argument_group("sweep")
    g.add_argument("--objectives", default="ce,distil,smooth,focal,jtt,rmc", help="comma-separated objective names")
    g.add_argument("--seeds", default="0", help="comma-separated seeds (the paper uses 3)")
    g.add_argument("--levels", default="0.4", help="comma-separated values of --level-option")
    g.add_argument("--level-option", default="sparsity", help="method option the levels set (sparsity, layers, "
                                                                "decoder_layers …)")
    g.add_argument("--method", default="magnitude", help=f"one of: {', '.join(METHODS.names())}")
    g.add_argument("--teacher-epochs", type=float, help="epochs for the teacher (default: --epochs)")
    g.add_argument("--student-init", choices=["teacher", "pretrained"], default="pretrained",
                   help="start each compressed model from the fine-tuned teacher or the pretrained model")
    g.add_argument("--out", default="forgetless-out/sweep", help="output folder (sweep.md, sweep.json, plots, runs)")
    owners["sweep_method"] = add_config_options(p, METHODS, "", "method options")

    p = sub.add_parser("profile", help="encoder-decoder speed profile: time per layer vs sequence length for several "
                                       "head / FFN widths, and encoder vs decoder share of generation time (NASH Fig. 3)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="minilm", help="encoder-decoder to profile (minilm = bert2bert warm start)")
    p.add_argument("--compressed", help="a compressed model folder to profile too")
    p.add_argument("--out", default="forgetless-out/profile", help="output folder (profile.json)")
    p.add_argument("--seq-lengths", default="16,32,64,128,256", help="comma-separated input lengths")
    p.add_argument("--head-fractions", default="1.0,0.5,0.25", help="comma-separated shares of heads kept")
    p.add_argument("--ffn-fractions", default="1.0,0.5,0.25", help="comma-separated shares of FFN units kept")
    p.add_argument("--batch-size", type=int, default=8, help="batch size")
    p.add_argument("--num-beams", type=int, default=1, help="beam size of the timed generation")
    p.add_argument("--max-new-tokens", type=int, default=16, help="tokens decoded per timed generation")
    p.add_argument("--source-length", type=int, default=64, help="source tokens of the timed generation")
    p.add_argument("--repeats", type=int, default=3, help="repeats (median reported)")
    p.add_argument("--seed", type=int, default=0, help="seed of model construction")
    p.add_argument("--threads", type=int, help="torch CPU threads")

    sub.add_parser("list", help="list methods, objectives, tasks and supported model types")
    from .recipe import add_run_parser

    add_run_parser(sub)
    return parser, owners


COMMANDS = {"compress": commands.cmd_compress, "compress-seq2seq": commands.cmd_compress,
            "demo": commands.cmd_compress, "finetune": commands.cmd_finetune, "evaluate": commands.cmd_evaluate,
            "bench": commands.cmd_bench, "list": commands.cmd_list, "sweep": commands.cmd_sweep,
            "profile": commands.cmd_profile, "run": cmd_run}


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


def run_recipe(path, scale: str | None = None, sets=(), out: str | None = None, check: bool = False):
    """``forgetless run`` from Python: (resolved recipe, report card / sweep summary / None)."""
    from .recipe import run_recipe as run

    return run(path, scale, sets, out, check, recipe_schema())


def main(argv: list[str] | None = None) -> int:
    parser, owners = build_parser()
    owners = {**owners, "schema": recipe_schema(parser, owners)}
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
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


__all__ = ["main", "build_parser", "parse_bool", "load_recipe", "run_recipe", "recipe_schema"]
