"""Command-line options: one vocabulary for every subcommand and every task / model kind.

Option names are config field names (``--train-size`` ↔ ``train_size``). Method and objective
options are generated from their config dataclasses: a field ``sparsity`` of a method config
becomes ``--sparsity``; a field ``lam`` of an objective config becomes ``--objective-lam``. An
option that does not belong to the chosen method or objective is an error.
"""
from __future__ import annotations

import argparse
import dataclasses
import typing

from ..errors import ConfigError

TRUE, FALSE = ("true",), ("false",)


def parse_bool(value) -> bool:
    """``true`` or ``false`` only, as documented (``1``, ``yes`` or ``ture`` are errors, not a guess)."""
    text = str(value).strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def add_task_options(p: argparse.ArgumentParser, default_task: str = "synthetic") -> None:
    g = p.add_argument_group("task")
    g.add_argument("--task", default=default_task,
                   help="classification: synthetic (built-in), mnli-small, mnli (→ HANS), sst2, rte, qnli, qqp (→ AdvGLUE / "
                        "PAWS), fever (→ FEVER-Symmetric) from --data-dir or the hub, files (local files), hub (a "
                        "Hugging Face dataset id); generation: synthetic-lookup (built-in), tweetqa, samsum, xsum "
                        "(need --data-dir)")
    g.add_argument("--data-dir", help="folder with the real evaluation data (e.g. ../shared/data); default: "
                                      "$FORGETLESS_DATA_DIR, else the named benchmarks load from the Hugging Face hub")
    g.add_argument("--train-size", type=int, help="cap the training set (seeded, stratified sample of exactly N)")
    g.add_argument("--eval-size", type=int, help="cap each evaluation set (seeded, stratified sample of exactly N)")
    g.add_argument("--hard-fraction", type=float, help="synthetic: share of shortcut-breaking training examples")
    g.add_argument("--eval-sets", help="generation tasks: extra evaluation sets, comma-separated (samsum, xsum)")
    g.add_argument("--train", dest="train_file", help="files: training file (.tsv/.csv/.json/.jsonl)")
    g.add_argument("--dev", dest="dev_file", help="files: dev file")
    g.add_argument("--challenge", action="append", default=[], metavar="NAME=PATH",
                   help="files: a challenge set (repeatable); hub: NAME=SPLIT")
    g.add_argument("--text-a", help="files/hub: column of the first text")
    g.add_argument("--text-b", help="files/hub: column of the second text ('' for single sentences)")
    g.add_argument("--label-column", help="files/hub: label column")
    g.add_argument("--labels", help="files/hub: label names in id order, comma-separated")
    g.add_argument("--hard-column", help="files: column with ground-truth hard flags (1/true = hard)")
    g.add_argument("--dataset", help="hub: dataset id; fever: a hub id for the paper-scale FEVER training set")
    g.add_argument("--subset", help="hub / fever: dataset configuration (e.g. mnli of nyu-mll/glue)")
    g.add_argument("--train-split", help="hub / fever: training split (default train)")
    g.add_argument("--dev-split", help="hub: dev split (default validation)")
    g.add_argument("--json-key", help="files: in JSON files, the key holding the list of records (or FILE.json:KEY)")


def task_from_args(args):
    from ..data.tasks import load_task

    options: dict = {}
    if args.task == "synthetic":
        options["hard_fraction"] = args.hard_fraction
    elif args.task in ("files", "hub"):
        challenge = dict(_pair(item) for item in args.challenge)
        options.update(challenge=challenge or None, text_a=args.text_a, label=args.label_column,
                       labels=[x.strip() for x in args.labels.split(",")] if args.labels else None)
        if args.text_b is not None:
            options["text_b"] = args.text_b  # '' (single sentences) is kept: None would mean the default
        if args.task == "files":
            options.update(train=args.train_file, dev=args.dev_file, hard=args.hard_column, json_key=args.json_key)
        else:
            options.update(dataset=args.dataset, subset=getattr(args, "subset", None),
                           train_split=getattr(args, "train_split", None), dev_split=getattr(args, "dev_split", None))
    elif args.task == "fever":
        options.update(dataset=args.dataset, subset=getattr(args, "subset", None),
                       train_split=getattr(args, "train_split", None))
    if getattr(args, "eval_sets", None):
        options["eval_sets"] = tuple(x.strip() for x in args.eval_sets.split(",") if x.strip())
    data_seed = getattr(args, "data_seed", None)
    return load_task(args.task, data_dir=args.data_dir, seed=args.seed if data_seed is None else data_seed,
                     train_size=args.train_size,
                     eval_size=args.eval_size, **options)


RESERVED_SETS = ("train", "dev")  # a challenge set of these names would replace the task's own set


def _pair(item: str) -> tuple[str, str]:
    if "=" not in item:
        raise ConfigError(f"--challenge {item}: expected NAME=PATH")
    name, value = (x.strip() for x in item.split("=", 1))
    if not name or not value:
        raise ConfigError(f"--challenge {item}: expected NAME=PATH with a name and a path")
    if name.lower() in RESERVED_SETS:
        raise ConfigError(f"--challenge {item}: {name!r} is the task's own {name.lower()} set; give the challenge "
                          "set another name (e.g. adv-dev)")
    return name, value


def add_train_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("training")
    g.add_argument("--model", default="minilm", help="model to start from: 'minilm' (bundled), tiny-bert / tiny-t5 / "
                                                     "tiny-bart / tiny-bert2bert (random, for quick runs), a local "
                                                     "folder, or a hub id")
    g.add_argument("--epochs", type=float, default=3.0, help="training epochs of the compressed model (nash/cofi: "
                                                             "the pruning phase; --finetune-epochs follows)")
    g.add_argument("--lr", type=float, default=5e-5, help="learning rate")
    g.add_argument("--batch-size", type=int, default=32, help="training batch size per device")
    g.add_argument("--max-length", type=int, default=128, help="max input tokens per example")
    g.add_argument("--max-target-length", type=int, default=32, help="generation: max target tokens in training")
    g.add_argument("--save-steps", type=int, default=200, help="checkpoint every N steps (resume point)")
    g.add_argument("--freeze-embeddings", type=parse_bool, default=False, metavar="BOOL",
                   help="do not train token embeddings / output projection (saves time on CPU)")
    g.add_argument("--seed", type=int, default=0, help="seed for data splits, model construction, masks and training")
    g.add_argument("--data-seed", type=int, help="seed of the data splits and caps only (default: --seed); the runs "
                                                 "of a sweep share one")
    g.add_argument("--no-progress", action="store_true", help="hide progress bars")
    g.add_argument("--threads", type=int, help="torch CPU threads (1 is often faster on a busy machine)")


def train_config_from_args(args, epochs=None):
    from ..training.trainer import TrainConfig

    return TrainConfig(epochs=epochs if epochs is not None else args.epochs, learning_rate=args.lr,
                       batch_size=args.batch_size, max_length=args.max_length,
                       max_target_length=args.max_target_length, seed=args.seed, save_steps=args.save_steps,
                       freeze_embeddings=args.freeze_embeddings, progress=not args.no_progress)


def add_eval_options(p: argparse.ArgumentParser) -> None:
    e = p.add_argument_group("evaluation")
    e.add_argument("--eval-batch-size", type=int, default=64, help="evaluation batch size")
    e.add_argument("--max-new-tokens", type=int, default=32, help="generation: tokens generated per example")
    e.add_argument("--num-beams", type=int, default=1, help="generation: beam size (1 = greedy)")
    e.add_argument("--perplexity-file", help="causal-lm: held-out perplexity of both models on this text file (one "
                                             "text per line, or .jsonl; default with --data-dir: its XSum sample)")
    e.add_argument("--perplexity-texts", type=int, default=40, help="causal-lm: the first N texts of that file")
    e.add_argument("--prompt-template", default="auto", help="causal-lm: auto (the chat template when the tokenizer "
                                                             "has one) | chat | plain")
    e.add_argument("--shots", type=int, default=0, help="causal-lm: k-shot prompts from the training split (seeded)")
    e.add_argument("--label-score", default="sum", help="causal-lm: sum | mean (length-normalised) label-word log-prob")
    e.add_argument("--score-calibration", default="content-free",
                   help="causal-lm: none | content-free | set-mean (contextual calibration, Zhao et al. 2021)")


def eval_config_from_args(args):
    from ..evaluate.config import EvalConfig

    from ..evaluate.perplexity import default_perplexity_file

    return EvalConfig(batch_size=args.eval_batch_size, max_new_tokens=args.max_new_tokens, num_beams=args.num_beams,
                      perplexity_file=args.perplexity_file or default_perplexity_file(getattr(args, "data_dir", None)),
                      perplexity_texts=args.perplexity_texts, prompt_template=args.prompt_template, shots=args.shots,
                      label_score=args.label_score, score_calibration=args.score_calibration, shot_seed=args.seed)


# ----- options generated from config dataclasses ----------------------------------------------
def field_type(field: dataclasses.Field, cls: type):
    hint = typing.get_type_hints(cls).get(field.name, str)
    origin = typing.get_origin(hint)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if hint is bool:
        return parse_bool
    if typing.get_origin(hint) in (list, tuple):
        inner = (typing.get_args(hint) or (str,))[0]
        return lambda v: [inner(x) for x in str(v).split(",") if x]
    return hint if hint in (int, float, str) else str


def add_config_options(p: argparse.ArgumentParser, registry, prefix: str, title: str) -> dict[str, list[str]]:
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
                                   type=field_type(field, cls), default=argparse.SUPPRESS,
                                   help="default " + defaults(registry, field.name))
            owners.setdefault(dest, []).append(name)
    return owners


def defaults(registry, field_name: str) -> str:
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


def collect(args, owners: dict[str, list[str]], prefix: str, chosen: str, what: str) -> dict:
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
