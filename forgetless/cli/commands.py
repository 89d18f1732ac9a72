"""The subcommands: each a thin wrapper over a Python function of the package."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from .options import collect, eval_config_from_args, task_from_args, train_config_from_args


def run_config_from_args(args, owners):
    from ..evaluate.clever import CleverConfig
    from ..evaluate.speed import SpeedConfig
    from ..pipeline import RunConfig

    clever = None
    if args.clever or args.method == "rahp":
        clever = CleverConfig(examples=args.clever_examples, batches=args.clever_batches,
                              samples=args.clever_samples, radius=args.clever_radius,
                              max_length=min(64, args.max_length), seed=args.seed)
    objective = args.objective
    if objective is None:
        from ..methods import METHODS

        objective = METHODS.get(args.method).default_objective
    return RunConfig(
        model=args.model, method=args.method,
        method_options=collect(args, owners["method"], "", args.method, "method"), then=args.then,
        objective=objective,
        objective_options=collect(args, owners["objective"], "objective-", objective, "objective"),
        teacher=args.teacher, base=args.base, student_init=args.student_init, model_kind=args.model_kind,
        train=train_config_from_args(args),
        teacher_train=train_config_from_args(args, args.teacher_epochs) if args.teacher_epochs else None,
        speed=SpeedConfig(batch_size=args.bench_batch_size, seq_len=args.bench_seq_len, repeats=args.bench_repeats,
                          new_tokens=args.bench_new_tokens),
        eval=replace(eval_config_from_args(args), runtime=args.runtime),  # --runtime: cli/runtime_options.py
        clever=clever, seed=args.seed, progress=not args.no_progress, keep_work=getattr(args, "keep_work", False),
    )


def cmd_compress(args, owners) -> int:
    task = task_from_args(args)  # first: a missing data folder or unreachable hub stops before the heavy imports
    from ..pipeline import compress
    from ..report.markdown import render_markdown

    from ..recipes.load import recipe_from_args
    from .export import check_push_target, check_report_to, push_saved

    run = run_config_from_args(args, owners)
    check_report_to(getattr(args, "report_to", None))
    if getattr(args, "report_to", None):
        run.train.report_to = args.report_to
        if run.teacher_train is not None:
            run.teacher_train.report_to = args.report_to
    check_push_target(getattr(args, "push_to_hub", None))
    recipe = recipe_from_args(args, "compress", owners["schema"]) if "schema" in owners else None
    card = compress(task, run, args.out, recipe=recipe, overwrite=args.overwrite)  # recipe: model/recipe.yaml
    print(render_markdown(card))
    print(f"report: {Path(args.out) / 'report.md'} (JSON: report.json, per-example: predictions.jsonl); "
          f"model: {Path(args.out) / 'model'} (model card: model/README.md)")
    push_saved(Path(args.out) / "model", getattr(args, "push_to_hub", None))
    return 0


def cmd_finetune(args, owners) -> int:
    import transformers
    from accelerate import PartialState

    from ..kinds import kind_for
    from ..models.io import save_model
    from ..training.trainer import fine_tune
    from ..outputs import check_output, mark_output, output_lock

    out = check_output(args.out, command="finetune", inputs=cli_inputs(args))
    task = task_from_args(args)
    kind = kind_for(task)
    state = PartialState()
    transformers.set_seed(args.seed)
    model, tokenizer = kind.load_model(args.model, task, args.seed)  # a bad model fails before OUT is made
    with output_lock(out):  # held by the first process of a distributed launch (outputs.distributed_follower)
        if state.is_main_process:
            mark_output(out, "finetune")
        model = fine_tune(model, tokenizer, kind.training_set(task, tokenizer), out / "checkpoints",
                          train_config_from_args(args))
        if state.is_main_process:
            save_model(model, out / "model", tokenizer, metadata={"role": "fine-tuned", "task": task.name, "task_kind": task.kind,
                                                                   "kind": kind.name, "world_size": state.num_processes})
            print(f"saved {out / 'model'} (trained on {state.num_processes} process(es))")
    return 0


def cli_inputs(args) -> dict:
    """Every path a command reads, by the flag that named it (the output rule protects them)."""
    inputs = {f"--{dest.replace('_', '-')}": getattr(args, dest, None) for dest in ("model", "teacher", "base", "compressed")}
    inputs.update({"MODEL_PATH": getattr(args, "model_path", None), "RECIPE": getattr(args, "recipe", None)})
    inputs.update({"--train": getattr(args, "train_file", None), "--dev": getattr(args, "dev_file", None)})
    for item in getattr(args, "challenge", None) or []:
        inputs[f"--challenge {item}"] = str(item).partition("=")[2] or None
    return inputs


def cmd_evaluate(args, owners) -> int:
    from ..evaluate_saved import evaluate_saved

    if args.json:
        from ..outputs import check_output

        check_output(args.json, "--json", command="evaluate", inputs=cli_inputs(args), overwrite=args.overwrite,
                     is_file=True)
    if args.task == "files" and not args.train_file:
        args.train_file = args.dev_file  # evaluation reads no training data; the files task wants one set
    task = task_from_args(args)
    result = evaluate_saved(args.model_path, task, args.json, max_length=args.max_length, overwrite=args.overwrite)
    for name, metrics in result["sets"].items():
        if "accuracy" in metrics:
            extra = ""
            if "hard" in metrics:
                extra = f"  hard {100 * (metrics['hard']['accuracy'] or 0):.1f}  easy {100 * (metrics['easy']['accuracy'] or 0):.1f}"
            print(f"{name:>12}: {100 * metrics['accuracy']:.2f}% (n={metrics['n']}){extra}")
        else:
            scores = ", ".join(f"{k} {metrics[k]:.2f}" for k in ("rougeL", "rouge1", "rouge2", "meteor") if k in metrics)
            print(f"{name:>12}: {scores} (n={metrics['n']})")
    if result.get("challenge_pooled") is not None:
        print(f"{'challenge':>12}: {100 * result['challenge_pooled']:.2f}% pooled over {', '.join(result['pooled_sets'])}")
    return 0


def cmd_bench(args, owners) -> int:
    from ..evaluate.speed import SpeedConfig, compare_speed
    from ..models.adapters import get_adapter
    from ..models.io import load_model
    from ..models.loading import load_classifier, load_seq2seq

    check_bench(args)
    compressed, _ = load_model(args.model_path, with_tokenizer=False)
    generate = get_adapter(compressed).is_seq2seq
    if generate:
        base, _ = load_seq2seq(args.base)
    else:
        base, _ = load_classifier(args.base, [str(i) for i in range(compressed.config.num_labels)])
    result = compare_speed(base, compressed, SpeedConfig(batch_size=args.batch_size, seq_len=args.seq_len,
                                                         repeats=args.repeats), generate=generate)
    print(json.dumps(result, indent=2))
    return 0


def check_bench(args) -> None:
    """``bench``: the base is the compressed model's family, and ``--seq-len`` fits both models."""
    from ..errors import OptionError
    from ..validate import model_dims, model_type_of

    compressed, base = model_type_of(args.model_path), model_type_of(args.base)
    if compressed and base and compressed != base:
        raise OptionError(f"--base {args.base}: is a {base} model, MODEL_PATH {args.model_path} a {compressed}; "
                          "give the model it was compressed from")
    for flag, name in (("MODEL_PATH", args.model_path), ("--base", args.base)):
        positions = (model_dims(name) or {}).get("max_positions")
        if positions and args.seq_len > positions:
            raise OptionError(f"--seq-len {args.seq_len}: {flag} {name} takes at most {positions} tokens; "
                              f"valid 2..{positions}")


def sweep_from_args(args, owners, recipe: dict | None = None) -> dict:
    """``run_sweep`` with everything the command line or a recipe gave: objectives with their own
    options, levels of the method option, seeds, training, evaluation and speed settings."""
    from ..evaluate.speed import SpeedConfig
    from ..sweep import distribute_options, parse_list, run_sweep

    objectives = parse_list(args.objectives)
    flat = {key[len("objective_"):]: getattr(args, key) for key in owners["objective"]
            if getattr(args, key, None) is not None}
    speed = SpeedConfig(batch_size=args.bench_batch_size, seq_len=args.bench_seq_len, repeats=args.bench_repeats,
                        new_tokens=args.bench_new_tokens)
    return run_sweep(
        task_from_args(args), args.out, objectives=objectives, seeds=parse_list(args.seeds, int),
        sparsities=args.levels, method=args.method, level_option=args.level_option,
        method_options=collect(args, owners["method"], "", args.method, "method"),
        objective_options=distribute_options(objectives, flat), model=args.model,
        train=train_config_from_args(args),
        teacher_train=train_config_from_args(args, args.teacher_epochs) if args.teacher_epochs else None,
        teacher_seed=args.teacher_seed, student_init=args.student_init, speed=speed, eval_config=eval_config_from_args(args),
        progress=not args.no_progress, recipe=recipe)


def cmd_sweep(args, owners) -> int:
    from ..outputs import check_output
    from ..recipes.load import recipe_from_args

    check_output(args.out, command="sweep", inputs=cli_inputs(args))
    recipe = recipe_from_args(args, "sweep", owners["schema"]) if "schema" in owners else None
    summary = sweep_from_args(args, owners, recipe)
    print((Path(args.out) / "sweep.md").read_text())
    print(f"sweep: {Path(args.out) / 'sweep.md'} (JSON: sweep.json, plots: {', '.join(summary.get('plots', []))}; "
          f"recipe: {Path(args.out) / 'recipe.yaml'})")
    return 0


def cmd_profile(args, owners) -> int:
    from ..evaluate.profile import run_profile
    from ..models.io import load_model
    from ..models.loading import load_seq2seq
    from ..outputs import check_output, mark_output, output_lock

    out = check_output(args.out, command="profile", inputs=cli_inputs(args), overwrite=args.overwrite)
    model, tokenizer = load_seq2seq(args.model, seed=args.seed)
    compressed = load_model(args.compressed) if args.compressed else None  # (model, tokenizer)
    with output_lock(out):
        mark_output(out, "profile")
        numbers = lambda text, cast: tuple(cast(x) for x in text.split(",") if x.strip())  # noqa: E731
        run_profile(model, tokenizer, args.out, compressed, numbers(args.seq_lengths, int),
                    numbers(args.head_fractions, float), numbers(args.ffn_fractions, float), args.batch_size,
                    args.num_beams, args.max_new_tokens, args.source_length, args.repeats)
    print(f"profile: {Path(args.out) / 'profile.md'} (JSON: profile.json, plot: profile.png)")
    return 0


def cmd_list(args, owners) -> int:
    from ..data.tasks import TASKS
    from ..methods import METHODS
    from ..models.adapters import supported_model_types
    from ..registry import OBJECTIVES

    print("methods:    ", ", ".join(f"{n} ({'/'.join(METHODS.get(n).kinds)})" for n in METHODS.names()))
    print("objectives: ", ", ".join(f"{n} ({'/'.join(OBJECTIVES.config_class(n).model_kinds)})" for n in OBJECTIVES.names()))
    print("tasks:      ", ", ".join(TASKS.names()))
    print("model types:", ", ".join(supported_model_types()))
    return 0
