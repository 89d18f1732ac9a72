"""argparse wiring for the seq2seq entry points, so the ``forgetless`` command can expose them
with two lines per sub-command::

    add_compress_arguments(subparser)   →  compress_from_args(args)   (run_compress)
    add_profile_arguments(subparser)    →  profile_from_args(args)    (run_profile)

Option names map one to one onto the keyword arguments of ``pipeline.run_compress`` /
``pipeline.run_profile`` (dashes → underscores).
"""
from __future__ import annotations

import argparse
import inspect

from .pipeline import run_compress, run_profile


def add_compress_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--method", default="nash", choices=["nash", "cofi"])
    p.add_argument("--model", default="minilm", help="minilm (bert2bert warm start), tiny-t5, tiny-bart, "
                                                      "tiny-bert2bert, a forgetless folder or a seq2seq HF folder")
    p.add_argument("--teacher", default=None, help="fine-tuned teacher folder (else fine-tuned first)")
    p.add_argument("--task", default="synthetic", choices=["synthetic", "tweetqa", "samsum", "xsum"])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--output-dir", default="runs/nash")
    p.add_argument("--eval-sets", default="", help="comma-separated extra evaluation sets: samsum,xsum")
    for name, typ, default in (("n-train", int, None), ("n-dev", int, None), ("seed", int, 0),
                               ("teacher-epochs", float, 3.0), ("prune-epochs", float, 1.0),
                               ("finetune-epochs", float, 1.0), ("batch-size", int, 16), ("learning-rate", float, 5e-5),
                               ("max-source-length", int, 128), ("max-target-length", int, 32),
                               ("max-new-tokens", int, 32), ("eval-beams", int, 1), ("decoder-layers", int, 3),
                               ("encoder-sparsity", float, 0.3), ("sparsity", float, 0.5),
                               ("lambda-enc", float, 0.001), ("lambda-dec", float, 0.001),
                               ("kd-temperature", float, 1.0), ("l0-learning-rate", float, 0.01),
                               ("init-droprate", float, 0.5), ("sparsity-warmup", float, 0.5),
                               ("speed-batch-size", int, 8), ("speed-beams", int, 1), ("speed-new-tokens", int, 16),
                               ("speed-repeats", int, 5), ("threads", int, None)):
        p.add_argument(f"--{name}", type=typ, default=default)
    p.add_argument("--decoder-selection", default="uniform", choices=["uniform", "low", "high"])
    p.add_argument("--encoder-pruning", default="l0", choices=["l0", "none", "uniform"])
    p.add_argument("--kd-direction", default="forward", choices=["forward", "reverse"])
    p.add_argument("--freeze-embeddings", action="store_true")
    p.add_argument("--progress", action="store_true")
    return p


def add_profile_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--model", default="minilm")
    p.add_argument("--output-dir", default="runs/profile")
    p.add_argument("--compressed", default=None, help="a compressed model folder to profile too")
    p.add_argument("--seq-lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    p.add_argument("--head-fractions", type=float, nargs="+", default=[1.0, 0.5, 0.25])
    p.add_argument("--ffn-fractions", type=float, nargs="+", default=[1.0, 0.5, 0.25])
    for name, typ, default in (("batch-size", int, 8), ("num-beams", int, 1), ("max-new-tokens", int, 16),
                               ("source-length", int, 64), ("repeats", int, 3), ("threads", int, None)):
        p.add_argument(f"--{name}", type=typ, default=default)
    return p


def _call(fn, args: argparse.Namespace, **overrides):
    accepted = inspect.signature(fn).parameters
    kwargs = {k: v for k, v in vars(args).items() if k in accepted}
    kwargs.update(overrides)
    return fn(**kwargs)


def compress_from_args(args: argparse.Namespace) -> dict:
    sets = tuple(s for s in (args.eval_sets or "").split(",") if s)
    return _call(run_compress, args, eval_sets=sets)


def profile_from_args(args: argparse.Namespace) -> dict:
    return _call(run_profile, args, seq_lengths=tuple(args.seq_lengths), head_fractions=tuple(args.head_fractions),
                 ffn_fractions=tuple(args.ffn_fractions))


def main(argv=None) -> None:
    """``python -m forgetless.seq2seq.cli_args compress|profile ...`` until the main CLI wires these."""
    parser = argparse.ArgumentParser(prog="forgetless-seq2seq")
    sub = parser.add_subparsers(dest="command", required=True)
    add_compress_arguments(sub.add_parser("compress", help="NASH / CoFi-style compression of a seq2seq model"))
    add_profile_arguments(sub.add_parser("profile", help="layer time vs length; encoder vs decoder share"))
    args = parser.parse_args(argv)
    if args.command == "compress":
        report = compress_from_args(args)
        print(f"report: {args.output_dir}/report.md; masked == sliced: {report['masked_equals_sliced']}")
    else:
        profile_from_args(args)
        print(f"profile: {args.output_dir}/profile.json")


if __name__ == "__main__":
    main()
