"""The ``forgetless`` argument parser, generated from the config tree (``forgetless.config``,
``forgetless.tree``): every option of ``RunConfig`` / ``SweepConfig`` / ``ProfileConfig`` and of every
registered method and objective config is a flag with its help, default and range. Building it
imports no torch, so ``--help`` is fast. The commands live in ``info.py``, ``models.py``, ``jobs.py``
and ``recipe.py`` (the table in ``__init__.py``)."""
from __future__ import annotations

import argparse
import dataclasses
import os
from dataclasses import replace
from pathlib import Path

from .. import tree
from ..config import ProfileConfig, RunConfig, SweepConfig
from ..data.registry import DATA_DIR_ENV
from ..options import default_of
from ..registry import METHODS, OBJECTIVES

DEMO_OUT = "forgetless-out/demo"
EXPORT_EXAMPLE = ("examples:\n  forgetless export runs/heads/model --format onnx --out runs/heads/onnx\n"
                  "  forgetless export runs/heads/model --push-to-hub me/minilm-heads-30")
RUN_EXAMPLE = ("examples:\n  forgetless run rmc-table7-9-objectives --scale cpu --data-dir DATA   # a built-in recipe\n"
               "  forgetless run rahp-table1 --check          # print the resolved recipe, run nothing\n"
               "  forgetless run rmc-table7-9-objectives --set seeds=[0] --set train.learning_rate=1e-4 --out runs/t7\n"
               "  forgetless run runs/t7/runs/rmc-s0.4-seed0/model/recipe.yaml   # rerun one saved run\n"
               "list the built-in recipes with `forgetless recipes`")
EXAMPLES = {
    "compress": "examples:\n  forgetless compress --method magnitude --sparsity 0.4 --out runs/mag40\n"
                "  forgetless compress --method heads --ratio 0.3 --then quantize:dtype=int8 --out runs/heads-int8\n"
                "  forgetless compress --method nash --model tiny-t5 --task synthetic-lookup --decoder-layers 2 "
                "--train-size 64 --eval-size 32 --epochs 1 --out runs/nash",
    "demo": "example:\n  forgetless demo --method heads --ratio 0.3\n\n"
            "demo's own defaults (they replace the ones listed above): --epochs 2 --lr 1e-4 --train-size 1500 "
            "--out forgetless-out/demo",
    "finetune": "example:\n  forgetless finetune --model minilm --task synthetic --epochs 2 --out runs/teacher",
    "evaluate": "example:\n  forgetless evaluate runs/heads/model --task synthetic --json runs/heads/eval.json",
    "bench": "example:\n  forgetless bench runs/heads/model --base minilm --repeats 9",
    "serve-check": "example:\n  forgetless serve-check runs/w4a16/model",
    "profile": "example:\n  forgetless profile --model tiny-t5 --compressed runs/nash/model --seq-lengths 16,64",
    "list": "example:\n  forgetless list",
    "report": "example:\n  forgetless report runs/heads      # rewrites runs/heads/report.md, report.html, metrics.png",
    "compare": "example:\n  forgetless compare runs/heads runs/truncate runs/mag40 --out runs/compare-sst2",
    "sweep": "examples:\n  forgetless sweep --objectives ce,rmc --levels 0.2,0.4 --seeds 0,1 --out runs/table7\n"
             "  forgetless sweep --method nash --model tiny-t5 --task synthetic-lookup --objectives nash-distil "
             "--level-option decoder_layers --levels 1,2,3 --out runs/nash-depth",
}
CONFIGS = {"compress": RunConfig, "compress-seq2seq": RunConfig, "demo": RunConfig, "finetune": RunConfig,
           "evaluate": RunConfig, "sweep": SweepConfig, "profile": ProfileConfig}  # commands built from the tree
KEEP = {"finetune": ("model", "seed", "progress", "task.", "train."),  # the only options of these commands
        "evaluate": ("seed", "task.", "train.max_length", "train.device", "eval.batch_size")}
DROP = {"evaluate": ("task.until_interval",)}  # kept above, but not for this command: it stops on the change
# between two models scored together, and evaluate scores one


def _keep(command: str, leaf) -> bool:
    paths = KEEP.get(command)
    if leaf.dotted in DROP.get(command, ()):
        return False
    return paths is None or any(leaf.dotted == p or (p.endswith(".") and leaf.dotted.startswith(p)) for p in paths)


def _help(leaf, owners: tuple[str, ...]) -> str:
    """The option's help and default; an option several methods (objectives) share gives each
    owner's own: ``cofi: target share … (default 0.5); magnitude: final share … (default 0.4)``."""
    if owners:
        registry = METHODS if leaf.path[0] == "method" else OBJECTIVES
        fields = [(name, next(f for f in dataclasses.fields(registry.config_class(name)) if f.name == leaf.field.name))
                  for name in owners]
        if len({f.metadata.get("help", "") for _, f in fields}) == 1:
            defaults = ", ".join(f"{_plain(default_of(f))} ({name})" for name, f in fields)
            return f"{fields[0][1].metadata.get('help', '')} (default {defaults})"
        return "; ".join(f"{name}: {f.metadata.get('help', '')} (default {_plain(default_of(f))})" for name, f in fields)
    value, meta = default_of(leaf.field), leaf.field.metadata
    if value is None or value == [] or meta.get("negate") or meta.get("switch"):
        return meta.get("help", "")
    return f"{meta.get('help', '')} (default {_plain(value)})"


def _plain(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    return getattr(value, "name", None) if hasattr(value, "name") and not isinstance(value, str) else str(value)


def add_tree_options(parser: argparse.ArgumentParser, cls: type, command: str,
                     chosen: dict[str, str] | None = None) -> None:
    """One flag per option of ``cls``'s tree (``dest`` = the flat key), grouped as the tree is;
    ``chosen`` (``{"method": name, "objective": name}``, for ``--help``): the options of those only."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for leaf in tree.table(cls):
        owners = tuple(o for o in leaf.owners if not chosen or o == chosen.get(leaf.path[0], o))
        if not leaf.cli or not _keep(command, leaf) or (leaf.owners and not owners):
            continue
        title = (f"{leaf.path[0]} options" if leaf.owners else getattr(leaf.cls, "group", "options"))
        group = groups.get(title) or groups.setdefault(title, parser.add_argument_group(title))
        meta = leaf.field.metadata
        kwargs = {"dest": leaf.key, "default": argparse.SUPPRESS, "help": _help(leaf, owners).replace("%", "%%")}
        if meta.get("switch") or meta.get("negate"):
            kwargs["action"] = "store_true"
        elif leaf.dotted in ("then", "task.challenge"):
            kwargs.update(action="append", metavar="METHOD[:OPTION=VALUE,...]" if leaf.dotted == "then" else "NAME=PATH")
        else:
            kwargs["metavar"] = (meta.get("choices") and "{" + ",".join(map(str, meta["choices"])) + "}") \
                or leaf.field.name.upper()
        group.add_argument(leaf.flag, **kwargs)


def _command(sub, name: str, help_text: str, cls: type | None = None, chosen: dict | None = None,
             **kwargs) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES.get(name),
                       formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    if cls is not None:
        add_tree_options(p, cls, name, chosen)
    return p


def _outputs(p, default: str, what: str, overwrite_help: str, push: bool = False, metavar: str = "OUT") -> None:
    g = p.add_argument_group("output")
    g.add_argument("--out", default=default, metavar=metavar, help=f"output folder ({what}; default {default})")
    g.add_argument("--overwrite", action="store_true", help=overwrite_help)
    if push:
        g.add_argument("--push-to-hub", metavar="REPO", help="after the run, upload OUT/model (with its model card) "
                                                             "to this Hugging Face hub repository (needs network)")


def add_export_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("export", help="export a saved model to ONNX (checked against PyTorch) and / or push it to "
                                      "the Hugging Face hub", description="Export a model folder written by "
                                      "forgetless (encoder classifiers and encoder-decoders) to ONNX with dynamic "
                                      "batch and sequence axes; every graph is run with onnxruntime and compared "
                                      "with PyTorch.", epilog=EXPORT_EXAMPLE,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_path", help="a model folder written by forgetless (e.g. OUT/model)")
    p.add_argument("--format", choices=["onnx"], help="export format (onnx)")
    p.add_argument("--out", help="output folder of the export, new or empty (default: MODEL_PATH/../onnx)")
    p.add_argument("--overwrite", action="store_true", help="replace the output of an earlier export in --out")
    p.add_argument("--opset", type=int, default=18, help="ONNX opset")
    p.add_argument("--atol", type=float, default=1e-4, help="largest accepted |ONNX − PyTorch| difference")
    p.add_argument("--push-to-hub", metavar="REPO", help="upload the model folder to this hub repository")
    return p


def build_parser(chosen: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; ``chosen`` (``cli.help_choices``): ``--help`` of one method shows
    the common options and that method's (and objective's) only."""
    parser = argparse.ArgumentParser(
        prog="forgetless",
        description="Compress transformer models and report what compression cost: accuracy on in-distribution "
                    "and challenge sets, relative bias (F_bias), hard vs easy accuracy, generation quality, size "
                    "and measured speedup.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log library messages")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (("compress", "fine-tune a teacher, compress it with a method, evaluate both, report"),
                       ("compress-seq2seq", "alias of `compress` (every method, encoder-decoders included)"),
                       ("demo", "the main job on the built-in synthetic task: fine-tune the bundled MiniLM, compress "
                                "it (drop half the layers), evaluate, benchmark, report")):
        p = _command(sub, name, text, RunConfig, chosen)
        _outputs(p, "forgetless-out/run", "model/, report.json, report.md",
                 "reuse an output folder that holds another run's output", push=True)
    sub.choices["demo"].set_defaults(out=DEMO_OUT, epochs="2", lr="1e-4", train_size="1500")
    _model_commands(sub)
    _job_commands(sub)
    _page_commands(sub)
    for name, command in sub.choices.items():
        if name not in ("list", "recipes", "report", "compare"):  # commands that load no model
            command.add_argument("--threads", type=int, help="torch CPU threads (1 is often faster on a busy machine)")
            command.add_argument("--trust-remote-code", action="store_true",
                                 help="let transformers run the Python files of a model folder that needs them "
                                      "(auto_map); off by default: such a folder is refused")
    return parser


def _model_commands(sub) -> None:
    """finetune, evaluate, bench, export."""
    p = _command(sub, "finetune", "fine-tune a model on a task and save it (works under `accelerate launch`)",
                 RunConfig)
    p.add_argument("--out", default="forgetless-out/finetune", help="output folder (checkpoints/, model/)")

    p = _command(sub, "evaluate", "scores of a saved model on every set of a task")
    p.add_argument("model_path", help="a forgetless model folder (or any HF folder)")
    add_tree_options(p, RunConfig, "evaluate")
    p.add_argument("--json", help="also write the metrics to this JSON file (a new file)")
    p.add_argument("--overwrite", action="store_true", help="replace a --json file an earlier evaluate wrote")

    p = _command(sub, "bench", "inference speed of a saved compressed model vs its base model")
    p.add_argument("model_path", help="the compressed model (forgetless folder)")
    p.add_argument("--base", default="minilm", help="the uncompressed model (default minilm)")
    p.add_argument("--batch-size", type=int, default=32, help="throughput batch size (default 32)")
    p.add_argument("--seq-len", type=int, default=128, help="input length (default 128)")
    p.add_argument("--repeats", type=int, default=5, help="interleaved repeats, median reported (default 5)")
    p.add_argument("--json", action="store_true", help="print the raw result as JSON (for scripts)")
    add_export_parser(sub)
    _serve_check_command(sub)


def _serve_check_command(sub) -> None:
    """serve-check (``serving/check.py``)."""
    p = _command(sub, "serve-check", "load a saved model folder in vLLM and compare its greedy answers with "
                                     "forgetless's own model of the folder")
    p.add_argument("model_path", help="a decoder-only model folder (e.g. OUT/model of a --scheme run)")
    p.add_argument("--prompts", help="a text file, one prompt a line (default: forgetless's 8 fixed prompts)")
    p.add_argument("--max-new-tokens", type=int, default=32, help="greedy tokens per answer (default 32)")
    p.add_argument("--dtype", default="auto", choices=("auto", "float32", "bfloat16", "float16"),
                   help="vLLM's activation dtype (default auto: the folder's)")
    p.add_argument("--timeout", type=float, default=900, help="seconds vLLM may take (default 900)")
    p.add_argument("--json", action="store_true", help="print the raw result as JSON (for scripts)")


def _job_commands(sub) -> None:
    """sweep, profile, run."""
    p = _command(sub, "sweep", "one configuration over objectives × levels of a method option × seeds: mean ± std "
                               "per set, F_bias, hard/easy, plots (Du et al. Table 7, Figures 1, 3)", SweepConfig)
    _outputs(p, "forgetless-out/sweep", "sweep.md, sweep.json, plots, runs/",
             "reuse an output folder that holds another sweep's output")

    p = _command(sub, "profile", "encoder-decoder speed profile: time per layer vs sequence length for several head "
                                 "/ FFN widths, and encoder vs decoder share of generation time (NASH Fig. 3)",
                 ProfileConfig)
    _outputs(p, "forgetless-out/profile", "profile.json, profile.md, profile.png",
             "replace the output of an earlier profile in --out")
    p = _command(sub, "run", "run a recipe file (a run, a sweep or a profile) at a scale, with overrides")
    p.epilog = RUN_EXAMPLE
    p.add_argument("recipe", help="a built-in recipe's name (see `forgetless recipes`) or a recipe YAML file "
                                  "(e.g. a saved model/recipe.yaml)")
    p.add_argument("--scale", choices=["cpu", "paper"], help="which scale of the recipe (default cpu)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe key: a flag's name (lr=1e-4) or a dotted path (train.learning_rate=1e-4); "
                        "the value is read as YAML: 0.4, true, [0, 1, 2] (repeatable)")
    p.add_argument("--out", help="output folder (default: the recipe's out, else forgetless-out/<name>-<scale>)")
    p.add_argument("--data-dir", help="data folder of the named benchmarks (default: the recipe's data_dir, else "
                                      "$FORGETLESS_DATA_DIR, else the Hugging Face hub)")
    p.add_argument("--check", action="store_true", help="validate and print the resolved recipe; run nothing")


def _page_commands(sub) -> None:
    """list, recipes, report, compare: no model loaded."""
    _command(sub, "list", "list methods (model kinds, task types, calibration data), objectives, tasks and models")
    p = _command(sub, "report", "re-render a run's report card (report.md, report.html, metrics.png) from its "
                                "report.json and predictions.jsonl, without loading any model")
    p.add_argument("run", metavar="OUT", help="the output folder of a `forgetless compress` run")
    p = _command(sub, "compare", "one side-by-side page (compare.md, compare.html, pareto.png) of several runs of "
                                 "one task: size, speedup, accuracies and F_bias with their intervals")
    p.add_argument("runs", metavar="OUT", nargs="+", help="output folders of `forgetless compress` runs (two or more)")
    _outputs(p, "forgetless-out/compare", "compare.md, compare.html, pareto.png; not a run folder",
             "replace the output of an earlier compare in --out", metavar="DIR")
    sub.add_parser("recipes", help="list the built-in recipes and the paper table or figure each reproduces",
                   epilog="example:\n  forgetless recipes\n  forgetless run rahp-table1 --scale cpu",
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    sub.add_parser("schema", help="print the JSON Schema of report.json (the report card), draft 2020-12",
                   epilog="example:\n  forgetless schema > report.schema.json\n"
                          "  python -c \"import json, jsonschema; jsonschema.validate(json.load(open("
                          "'runs/heads/report.json')), json.load(open('report.schema.json')))\"",
                   formatter_class=argparse.RawDescriptionHelpFormatter)


def config_from_args(args: argparse.Namespace):
    """The config a parsed command line describes (None for commands that take no config)."""
    cls = CONFIGS.get(args.command)
    if cls is None:
        return None
    known = tree.index(cls)
    return tree.build(cls, {k: v for k, v in vars(args).items() if k in known and k != "command"})


def with_data_read(config):
    """``config`` with the data actually read, so the saved recipe reruns on the same data from any
    folder: ``--data-dir`` made absolute, else ``$FORGETLESS_DATA_DIR`` (none: the hub), and a
    ``--calibration-data`` file made absolute (a data-folder set stays a name)."""
    folder = config.task.data_dir or os.environ.get(DATA_DIR_ENV) or None
    folder = str(Path(folder).expanduser().resolve()) if folder and Path(folder).expanduser().is_dir() else folder
    config = replace(config, task=replace(config.task, data_dir=folder))
    texts = getattr(config, "calibration_data", None)
    if texts and Path(texts).expanduser().is_file():
        config = replace(config, calibration_data=str(Path(texts).expanduser().resolve()))
    return config
