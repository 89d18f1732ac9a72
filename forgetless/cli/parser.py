"""The ``forgetless`` argument parser: every subcommand and its options (one vocabulary: see
``options.py``). Building it imports no model code, so ``--help`` is fast; the subcommands
themselves live in ``commands.py``, ``recipe.py`` and ``export.py``."""
from __future__ import annotations

import argparse

from .export import add_export_parser, add_shipping_options
from .runtime_options import add_runtime_options
from .options import add_config_options, add_eval_options, add_task_options, add_train_options

RUN_HELP = "run a recipe file (a run, a sweep or a profile) at a scale, with overrides"
RUN_EXAMPLE = ("examples:\n  forgetless run rmc-table7-9-objectives --scale cpu --data-dir DATA   # a built-in recipe\n"
           "  forgetless run rahp-table1 --check          # print the resolved recipe, run nothing\n"
           "  forgetless run rmc-table7-9-objectives --set seeds=[0] --set train_size=2000 --out runs/t7\n"
           "  forgetless run runs/t7/runs/rmc-s0.4-seed0/model/recipe.yaml   # rerun one saved run\n"
           "list the built-in recipes with `forgetless recipes`")
DEMO_OUT = "forgetless-out/demo"
EXAMPLES = {
    "compress": "examples:\n  forgetless compress --method magnitude --sparsity 0.4 --out runs/mag40\n"
                "  forgetless compress --method nash --model tiny-t5 --task synthetic-lookup --decoder-layers 2 "
                "--train-size 64 --eval-size 32 --epochs 1 --out runs/nash",
    "demo": "example:\n  forgetless demo --method heads --ratio 0.3\n\n"
            "demo's own defaults (they replace the ones listed above): --epochs 2 --lr 1e-4 --train-size 1500 "
            "--method truncate --out forgetless-out/demo",
    "finetune": "example:\n  forgetless finetune --model minilm --task synthetic --epochs 2 --out runs/teacher",
    "evaluate": "example:\n  forgetless evaluate runs/heads/model --task synthetic --json runs/heads/eval.json",
    "bench": "example:\n  forgetless bench runs/heads/model --base minilm --repeats 9",
    "profile": "example:\n  forgetless profile --model tiny-t5 --compressed runs/nash/model --seq-lengths 16,64",
    "list": "example:\n  forgetless list",
    "sweep": "example:\n  forgetless sweep --objectives ce,rmc --levels 0.2,0.4 --seeds 0,1 --out runs/table7\n"
             "  forgetless sweep --method nash --model tiny-t5 --task synthetic-lookup --objectives nash-distil "
             "--level-option decoder_layers --levels 1,2,3 --out runs/nash-depth",
}


def add_bench_options(p) -> None:
    b = p.add_argument_group("speed benchmark")
    b.add_argument("--bench-batch-size", type=int, default=32, help="throughput batch size")
    b.add_argument("--bench-seq-len", type=int, default=128, help="input length of the timed batches")
    b.add_argument("--bench-repeats", type=int, default=5, help="interleaved repeats (median reported)")
    b.add_argument("--bench-new-tokens", type=int, default=16, help="generation: tokens decoded per timed call")


def _compress_options(sub, name: str, help_text: str, owners: dict):
    from .catalogue import methods, objectives

    METHODS, OBJECTIVES = methods(), objectives()  # names and config dataclasses, without torch

    p = sub.add_parser(name, help=help_text, description=help_text, epilog=EXAMPLES.get(name),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_task_options(p)
    add_train_options(p)
    g = p.add_argument_group("compression")
    g.add_argument("--method", default="truncate", help=f"one of: {', '.join(METHODS.names())} (default truncate)")
    g.add_argument("--objective", help=f"training objective: {', '.join(OBJECTIVES.names())} (default: the method's: "
                                       "ce; nash-distil for nash and cofi)")
    g.add_argument("--model-kind", default="auto", choices=["auto", "classifier", "seq2seq", "causal-lm"],
                   help="how the model is used: auto (classifier; seq2seq for generation tasks and nash/cofi), "
                        "or causal-lm: a decoder-only LM scored zero-shot by label-word likelihood")
    g.add_argument("--teacher", help="a saved fine-tuned model to use as teacher / base instead of fine-tuning "
                                     "(read only)")
    g.add_argument("--teacher-epochs", type=float, help="epochs for the teacher (default: --epochs)")
    g.add_argument("--base", choices=["fine-tune", "as-is"], default="fine-tune",
                   help="fine-tune: the base (teacher) is --model fine-tuned on the task; as-is: --model as it is, "
                        "no training, nothing written (post-training compression of a pretrained LLM)")
    g.add_argument("--student-init", choices=["teacher", "pretrained"], default="teacher",
                   help="start the compressed model from the fine-tuned teacher or from the pretrained model")
    g.add_argument("--out", default="forgetless-out/run", help="output folder (model/, report.json, report.md)")
    g.add_argument("--overwrite", action="store_true", help="reuse an output folder that holds another run's output")
    add_shipping_options(p)
    add_eval_options(p)
    add_runtime_options(p)
    add_bench_options(p)
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
    from .catalogue import methods, objectives

    METHODS = methods()

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

    p = sub.add_parser("finetune", epilog=EXAMPLES["finetune"], help="fine-tune a model on a task and save it (works under `accelerate launch`)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_task_options(p)
    add_train_options(p)
    p.add_argument("--out", default="forgetless-out/finetune", help="output folder (checkpoints/, model/)")

    p = sub.add_parser("evaluate", epilog=EXAMPLES["evaluate"], help="scores of a saved model on every set of a task",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("model_path", help="a forgetless model folder (or any HF folder)")
    add_task_options(p)
    p.add_argument("--seed", type=int, default=0, help="seed of data splits and caps")
    p.add_argument("--max-length", type=int, default=128, help="max input tokens per example")
    p.add_argument("--json", help="also write the metrics to this JSON file (a new file)")
    p.add_argument("--overwrite", action="store_true", help="replace a --json file an earlier evaluate wrote")

    p = sub.add_parser("bench", epilog=EXAMPLES["bench"], help="inference speed of a saved compressed model vs its base model",
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
    g.add_argument("--teacher-seed", type=int, help="seed of one teacher shared by every seed of the sweep "
                                                    "(default: one teacher per seed)")
    g.add_argument("--student-init", choices=["teacher", "pretrained"], default="pretrained",
                   help="start each compressed model from the fine-tuned teacher or the pretrained model")
    g.add_argument("--out", default="forgetless-out/sweep", help="output folder (sweep.md, sweep.json, plots, runs)")
    add_bench_options(p)
    owners["sweep_method"] = add_config_options(p, METHODS, "", "method options")
    owners["objective"] = add_config_options(p, objectives(), "objective-", "objective options")

    p = sub.add_parser("profile", epilog=EXAMPLES["profile"], help="encoder-decoder speed profile: time per layer vs sequence length for several "
                                       "head / FFN widths, and encoder vs decoder share of generation time (NASH Fig. 3)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", default="minilm", help="encoder-decoder to profile (minilm = bert2bert warm start)")
    p.add_argument("--compressed", help="a compressed model folder to profile too")
    p.add_argument("--out", default="forgetless-out/profile", help="output folder (profile.json)")
    p.add_argument("--overwrite", action="store_true", help="replace the output of an earlier profile in --out")
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

    sub.add_parser("list", help="list methods, objectives, tasks and supported model types", epilog=EXAMPLES["list"],
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    add_export_parser(sub)

    add_run_parser(sub)
    for name, command in sub.choices.items():
        if name != "list":
            command.add_argument("--trust-remote-code", action="store_true",
                                 help="let transformers run the Python files of a model folder that needs them "
                                      "(auto_map); off by default: such a folder is refused")
    return parser, owners



def add_run_parser(sub) -> None:
    import argparse

    p = sub.add_parser("run", help="run a recipe file (a run, a sweep or a profile) at a scale, with overrides",
                       description=RUN_HELP, epilog=RUN_EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recipe", help="a built-in recipe's name (see `forgetless recipes`) or a recipe YAML file "
                                  "(e.g. a saved model/recipe.yaml)")
    p.add_argument("--scale", choices=["cpu", "paper"], help="which scale of the recipe (default cpu)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe key (repeatable; the value is read as YAML: 0.4, true, [0, 1, 2])")
    p.add_argument("--out", help="output folder (default: the recipe's out, else forgetless-out/<name>-<scale>)")
    p.add_argument("--data-dir", help="data folder of the named benchmarks (default: the recipe's data_dir, else "
                                      "$FORGETLESS_DATA_DIR, else the Hugging Face hub)")
    p.add_argument("--check", action="store_true", help="validate and print the resolved recipe; run nothing")
    p.add_argument("--threads", type=int, help="torch CPU threads")
    sub.add_parser("recipes", help="list the built-in recipes and the paper table or figure each reproduces",
                   epilog="example:\n  forgetless recipes\n  forgetless run rahp-table1 --scale cpu",
                   formatter_class=argparse.RawDescriptionHelpFormatter)
