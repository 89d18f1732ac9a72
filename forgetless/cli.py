"""The ``forgetless`` command. Every subcommand is a thin wrapper over a Python function.

Method and objective options are generated from their config dataclasses: a field ``sparsity``
of a method config becomes ``--sparsity``; a field ``lam`` of an objective config becomes
``--objective-lam``. Options that do not belong to the chosen method are errors.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
import typing
from pathlib import Path

from .errors import ConfigError, ForgetlessError

DEMO_OUT = "forgetless-out/demo"


def _add_task_options(p: argparse.ArgumentParser, default_task: str = "synthetic") -> None:
    g = p.add_argument_group("task")
    g.add_argument("--task", default=default_task,
                   help="task name: synthetic (built-in, no download), mnli-small (→ HANS), sst2, rte, qnli, qqp "
                        "(→ AdvGLUE / PAWS; these need --data-dir), files (local files), hub (Hugging Face dataset id)")
    g.add_argument("--data-dir", help="folder with the real evaluation data (e.g. ../shared/data); "
                                      "default: $FORGETLESS_DATA_DIR")
    g.add_argument("--train-size", type=int, help="cap the training set (seeded, stratified sample)")
    g.add_argument("--eval-size", type=int, help="cap each evaluation set (seeded, stratified sample)")
    g.add_argument("--hard-fraction", type=float, help="synthetic: share of shortcut-breaking training examples")
    g.add_argument("--train", dest="train_file", help="files: training file (.tsv/.csv/.json/.jsonl)")
    g.add_argument("--dev", dest="dev_file", help="files: dev file")
    g.add_argument("--challenge", action="append", default=[], metavar="NAME=PATH",
                   help="files: a challenge set (repeatable); hub: NAME=SPLIT")
    g.add_argument("--text-a", help="files/hub: column of the first text")
    g.add_argument("--text-b", help="files/hub: column of the second text ('' for single sentences)")
    g.add_argument("--label-column", help="files/hub: label column")
    g.add_argument("--labels", help="files/hub: label names in id order, comma-separated")
    g.add_argument("--hard-column", help="files: column with ground-truth hard flags (1/true = hard)")
    g.add_argument("--dataset", help="hub: dataset id")


def task_from_args(args):
    from .data.tasks import load_task

    options: dict = {}
    if args.task == "synthetic":
        options["hard_fraction"] = args.hard_fraction
    elif args.task in ("files", "hub"):
        challenge = dict(_pair(item) for item in args.challenge)
        options.update(challenge=challenge or None, text_a=args.text_a, label=args.label_column,
                       labels=args.labels.split(",") if args.labels else None)
        if args.text_b is not None:
            options["text_b"] = args.text_b or None
        if args.task == "files":
            options.update(train=args.train_file, dev=args.dev_file, hard=args.hard_column)
        else:
            options.update(dataset=args.dataset)
    return load_task(args.task, data_dir=args.data_dir, seed=args.seed, train_size=args.train_size,
                     eval_size=args.eval_size, **options)


def _pair(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"expected NAME=VALUE, got {item!r}")
    name, value = item.split("=", 1)
    return name, value


def _add_train_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--model", default="minilm", help="model to start from: 'minilm' (bundled), a local folder, "
                                                     "or a hub id (default: minilm)")
    g.add_argument("--epochs", type=float, default=3.0, help="training epochs (default 3)")
    g.add_argument("--lr", type=float, default=5e-5, help="learning rate (default 5e-5)")
    g.add_argument("--batch-size", type=int, default=32, help="training batch size per device (default 32)")
    g.add_argument("--max-length", type=int, default=128, help="max tokens per example (default 128)")
    g.add_argument("--save-steps", type=int, default=200, help="checkpoint every N steps (resume point)")
    g.add_argument("--seed", type=int, default=0, help="seed for data splits, masks and training (default 0)")
    g.add_argument("--no-progress", action="store_true", help="hide progress bars")
    g.add_argument("--threads", type=int, help="torch CPU threads (1 is often faster on a busy machine)")


def train_config_from_args(args, epochs=None):
    from .training.trainer import TrainConfig

    return TrainConfig(epochs=epochs if epochs is not None else args.epochs, learning_rate=args.lr,
                       batch_size=args.batch_size, max_length=args.max_length, seed=args.seed,
                       save_steps=args.save_steps, progress=not args.no_progress)


# ----- options generated from config dataclasses ----------------------------------------------
def _field_type(field: dataclasses.Field, cls: type):
    hint = typing.get_type_hints(cls).get(field.name, str)
    origin = typing.get_origin(hint)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        return lambda v: str(v).lower() in ("1", "true", "yes", "on")
    if typing.get_origin(hint) in (list, tuple):
        inner = (typing.get_args(hint) or (str,))[0]
        return lambda v: [inner(x) for x in str(v).split(",") if x]
    return hint if hint in (int, float, str) else str


def _add_config_options(p: argparse.ArgumentParser, registry, prefix: str, title: str) -> dict[str, list[str]]:
    """One option per config field over every registered entry; returns {dest: [entry names]}."""
    owners: dict[str, list[str]] = {}
    group = p.add_argument_group(title)
    for name in registry.names():
        cls = registry.config_class(name)
        if cls is None:
            continue
        for field in dataclasses.fields(cls):
            dest = f"{prefix.replace('-', '_')}{field.name}"
            if dest not in owners:
                group.add_argument(f"--{prefix}{field.name.replace('_', '-')}", dest=dest,
                                   type=_field_type(field, cls), default=argparse.SUPPRESS,
                                   help="default " + _defaults(registry, field.name))
            owners.setdefault(dest, []).append(name)
    return owners


def _defaults(registry, field_name: str) -> str:
    """'0.2 (heads), 0.6 (rahp)': each owner's own default for an option."""
    parts = []
    for name in registry.names():
        cls = registry.config_class(name)
        fields = {f.name: f for f in dataclasses.fields(cls)} if cls is not None else {}
        if field_name in fields:
            f = fields[field_name]
            value = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            parts.append(f"{value} ({name})")
    return ", ".join(parts)


def _collect(args, owners: dict[str, list[str]], prefix: str, chosen: str, what: str) -> dict:
    options = {}
    for dest, entries in owners.items():
        value = getattr(args, dest, None)
        if value is None:
            continue
        if chosen not in entries:
            flag = "--" + dest.replace("_", "-")
            raise ConfigError(f"option {flag} does not apply to {what} {chosen!r} (it belongs to {', '.join(entries)})")
        options[dest[len(prefix.replace('-', '_')):]] = value
    return options


# ----- subcommands -----------------------------------------------------------------------------
def cmd_compress(args, owners) -> int:
    from .evaluate.speed import SpeedConfig
    from .pipeline import RunConfig, compress
    from .report.markdown import render_markdown

    from .evaluate.clever import CleverConfig

    task = task_from_args(args)
    clever = None
    if args.clever or args.method == "rahp":
        clever = CleverConfig(examples=args.clever_examples, batches=args.clever_batches,
                              samples=args.clever_samples, radius=args.clever_radius,
                              max_length=min(64, args.max_length), seed=args.seed)
    run = RunConfig(
        model=args.model, method=args.method,
        method_options=_collect(args, owners["method"], "", args.method, "method"),
        objective=args.objective,
        objective_options=_collect(args, owners["objective"], "objective-", args.objective, "objective"),
        teacher=args.teacher, student_init=args.student_init,
        train=train_config_from_args(args),
        teacher_train=train_config_from_args(args, args.teacher_epochs) if args.teacher_epochs else None,
        speed=SpeedConfig(batch_size=args.bench_batch_size, seq_len=args.bench_seq_len, repeats=args.bench_repeats),
        clever=clever, seed=args.seed, progress=not args.no_progress,
    )
    card = compress(task, run, args.out)
    print(render_markdown(card))
    print(f"report: {Path(args.out) / 'report.md'} (JSON: report.json); model: {Path(args.out) / 'model'}")
    return 0


def cmd_finetune(args, owners) -> int:
    from .models.io import save_model
    from .models.loading import load_classifier
    from .training.trainer import fine_tune

    import transformers
    from accelerate import PartialState

    task = task_from_args(args)
    transformers.set_seed(args.seed)
    model, tokenizer = load_classifier(args.model, task.label_names, seed=args.seed)
    out = Path(args.out)
    model = fine_tune(model, tokenizer, task.train, out / "checkpoints", train_config_from_args(args))
    state = PartialState()
    if state.is_main_process:
        save_model(model, out / "model", tokenizer, metadata={"role": "fine-tuned", "task": task.name,
                                                               "world_size": state.num_processes})
        print(f"saved {out / 'model'} (trained on {state.num_processes} process(es))")
    return 0


def cmd_evaluate(args, owners) -> int:
    from .pipeline import evaluate_saved

    task = task_from_args(args)
    result = evaluate_saved(args.model_path, task, args.json, max_length=args.max_length)
    for name, metrics in result["sets"].items():
        extra = ""
        if "hard" in metrics:
            extra = f"  hard {100 * (metrics['hard']['accuracy'] or 0):.1f}  easy {100 * (metrics['easy']['accuracy'] or 0):.1f}"
        print(f"{name:>12}: {100 * metrics['accuracy']:.2f}% (n={metrics['n']}){extra}")
    if result["challenge_pooled"] is not None:
        print(f"{'challenge':>12}: {100 * result['challenge_pooled']:.2f}% pooled over {', '.join(result['pooled_sets'])}")
    return 0


def cmd_bench(args, owners) -> int:
    from .evaluate.speed import SpeedConfig, compare_speed
    from .models.io import load_model
    from .models.loading import load_classifier

    compressed, _ = load_model(args.model_path, with_tokenizer=False)
    labels = [str(i) for i in range(compressed.config.num_labels)]
    base, _ = load_classifier(args.base, labels)
    result = compare_speed(base, compressed, SpeedConfig(batch_size=args.batch_size, seq_len=args.seq_len,
                                                         repeats=args.repeats))
    print(json.dumps(result, indent=2))
    return 0


def cmd_sweep(args, owners) -> int:
    from .sweep import parse_list, run_sweep

    task = task_from_args(args)
    method_options = _collect(args, owners["method"], "", args.method, "method")
    summary = run_sweep(
        task, args.out, objectives=parse_list(args.objectives), seeds=parse_list(args.seeds, int),
        sparsities=parse_list(args.levels, float if args.level_option == "sparsity" else _number),
        method=args.method, method_options=method_options, level_option=args.level_option, model=args.model,
        train=train_config_from_args(args),
        teacher_train=train_config_from_args(args, args.teacher_epochs) if args.teacher_epochs else None,
        student_init=args.student_init, progress=not args.no_progress)
    print((Path(args.out) / "sweep.md").read_text())
    print(f"sweep: {Path(args.out) / 'sweep.md'} (JSON: sweep.json, plots: {', '.join(summary.get('plots', []))})")
    return 0


def _number(value: str):
    return float(value) if "." in value else int(value)


def cmd_seq2seq(args, owners) -> int:
    from .seq2seq.cli_args import compress_from_args

    report = compress_from_args(args)
    print(Path(args.output_dir, "report.md").read_text())
    print(f"report: {Path(args.output_dir) / 'report.md'}; masked == sliced: {report.get('masked_equals_sliced')}")
    return 0


def cmd_profile(args, owners) -> int:
    from .seq2seq.cli_args import profile_from_args

    profile_from_args(args)
    print(f"profile: {Path(args.output_dir) / 'profile.json'}")
    return 0


def cmd_list(args, owners) -> int:
    from .data.tasks import TASKS
    from .methods import METHODS
    from .models.adapters import supported_model_types
    from .objectives import OBJECTIVES

    print("methods:    ", ", ".join(METHODS.names()))
    print("objectives: ", ", ".join(OBJECTIVES.names()))
    print("tasks:      ", ", ".join(TASKS.names()))
    print("model types:", ", ".join(supported_model_types()))
    return 0


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    from .methods import METHODS
    from .objectives import OBJECTIVES

    parser = argparse.ArgumentParser(
        prog="forgetless",
        description="Compress transformer models and report what compression cost: accuracy on in-distribution "
                    "and challenge sets, relative bias (F_bias), hard vs easy accuracy, size and measured speedup.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log library messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    owners: dict = {}

    def compress_parser(name, help_text, default_task="synthetic"):
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
        _add_task_options(p, default_task)
        _add_train_options(p)
        g = p.add_argument_group("compression")
        g.add_argument("--method", default="truncate", help=f"one of: {', '.join(METHODS.names())}")
        g.add_argument("--objective", default="ce", help=f"training objective: {', '.join(OBJECTIVES.names())}")
        g.add_argument("--teacher", help="a saved fine-tuned model to use as teacher/base instead of fine-tuning")
        g.add_argument("--teacher-epochs", type=float, help="epochs for the teacher (default: --epochs)")
        g.add_argument("--student-init", choices=["teacher", "pretrained"], default="teacher",
                       help="start the compressed model from the fine-tuned teacher or from the pretrained model")
        g.add_argument("--out", default="forgetless-out/run", help="output folder (model/, report.json, report.md)")
        b = p.add_argument_group("speed benchmark")
        b.add_argument("--bench-batch-size", type=int, default=32)
        b.add_argument("--bench-seq-len", type=int, default=128)
        b.add_argument("--bench-repeats", type=int, default=5)
        r = p.add_argument_group("robustness")
        r.add_argument("--clever", action="store_true",
                       help="add CLEVER estimates (Weng et al. 2018) of both models on a fixed dev subset "
                            "(always on for --method rahp)")
        r.add_argument("--clever-examples", type=int, default=64, help="size of the CLEVER evaluation subset")
        r.add_argument("--clever-batches", type=int, default=20, help="batch maxima for the reverse-Weibull fit")
        r.add_argument("--clever-samples", type=int, default=16, help="points sampled per batch")
        r.add_argument("--clever-radius", type=float, default=2.0, help="ℓ2 ball radius in embedding units")
        owners["method"] = _add_config_options(p, METHODS, "", "method options")
        owners["objective"] = _add_config_options(p, OBJECTIVES, "objective-", "objective options")
        return p

    compress_parser("compress", "fine-tune a teacher, compress it with a method, evaluate both, report")
    demo = compress_parser("demo", "the main job on the built-in synthetic task: fine-tune the bundled MiniLM, "
                                   "compress it (default: drop half the layers), evaluate, benchmark, report "
                                   "(about 2-3 minutes on 2 CPU cores)")
    demo.set_defaults(out=DEMO_OUT, epochs=2.0, lr=1e-4, train_size=1500, eval_size=None, method="truncate")

    p = sub.add_parser("finetune", help="fine-tune a model on a task and save it (works under `accelerate launch`)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    _add_task_options(p)
    _add_train_options(p)
    p.add_argument("--out", default="forgetless-out/finetune", help="output folder (checkpoints/, model/)")

    p = sub.add_parser("evaluate", help="accuracy of a saved model on every set of a task",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("model_path", help="a forgetless model folder (or any HF folder)")
    _add_task_options(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--json", help="also write the metrics to this JSON file")

    p = sub.add_parser("bench", help="inference speed of a saved compressed model vs its base model",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("model_path", help="the compressed model (forgetless folder)")
    p.add_argument("--base", default="minilm", help="the uncompressed model")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)

    p = sub.add_parser("sweep", help="one configuration over several objectives × seeds × sparsities: mean ± std "
                                     "per set, F_bias, hard/easy, plots (Du et al. Table 7, Figures 1 and 3)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    _add_task_options(p)
    _add_train_options(p)
    g = p.add_argument_group("sweep")
    g.add_argument("--objectives", default="ce,distil,smooth,focal,jtt,rmc", help="comma-separated objective names")
    g.add_argument("--seeds", default="0", help="comma-separated seeds (the paper uses 3)")
    g.add_argument("--levels", "--sparsities", dest="levels", default="0.4",
                   help="comma-separated values of --level-option (default: magnitude sparsities)")
    g.add_argument("--level-option", default="sparsity", help="method option the levels set (e.g. layers)")
    g.add_argument("--method", default="magnitude", help=f"one of: {', '.join(METHODS.names())}")
    g.add_argument("--teacher-epochs", type=float, help="epochs for the teacher (default: --epochs)")
    g.add_argument("--student-init", choices=["teacher", "pretrained"], default="pretrained",
                   help="start each compressed model from the fine-tuned teacher or the pretrained model")
    g.add_argument("--out", default="forgetless-out/sweep", help="output folder (sweep.md, sweep.json, plots, runs)")
    owners["sweep_method"] = _add_config_options(p, METHODS, "", "method options")

    from .seq2seq.cli_args import add_compress_arguments, add_profile_arguments

    p = sub.add_parser("compress-seq2seq", help="NASH / CoFi-style compression of an encoder-decoder model "
                                                "(`forgetless compress --method nash|cofi` lands here)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_compress_arguments(p)
    p.add_argument("--out", dest="output_dir", default=argparse.SUPPRESS, help="alias of --output-dir")
    p = sub.add_parser("profile", help="seq2seq speed profile: time per layer vs sequence length for several head / "
                                       "FFN widths, and encoder vs decoder share of generation time (NASH Fig. 3)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_profile_arguments(p)
    p.add_argument("--out", dest="output_dir", default=argparse.SUPPRESS, help="alias of --output-dir")

    sub.add_parser("list", help="list methods, objectives, tasks and supported model types")
    return parser, owners


COMMANDS = {"compress": cmd_compress, "demo": cmd_compress, "finetune": cmd_finetune, "evaluate": cmd_evaluate,
            "bench": cmd_bench, "list": cmd_list, "sweep": cmd_sweep, "compress-seq2seq": cmd_seq2seq,
            "profile": cmd_profile}
SEQ2SEQ_METHODS = ("nash", "cofi")


def route_seq2seq(argv: list[str]) -> list[str]:
    """``compress --method nash|cofi`` compresses an encoder-decoder model: hand it to ``compress-seq2seq``."""
    if not argv or argv[0] != "compress" or "--help" in argv or "-h" in argv:
        return argv
    for i, item in enumerate(argv):
        method = argv[i + 1] if item == "--method" and i + 1 < len(argv) else (
            item.split("=", 1)[1] if item.startswith("--method=") else None)
        if method in SEQ2SEQ_METHODS:
            return ["compress-seq2seq"] + argv[1:]
    return argv


def main(argv: list[str] | None = None) -> int:
    parser, owners = build_parser()
    argv = route_seq2seq(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
