"""The subcommands: each a thin wrapper over a Python function of the package. ``config`` is the
config tree the command line describes (``parser.config_from_args``)."""
from __future__ import annotations

import json
from pathlib import Path


def cmd_compress(args, config) -> int:
    from ..data.tasks import task_from_config
    from .export import check_push_target, check_report_to
    check_report_to(config.train.report_to)
    check_push_target(getattr(args, "push_to_hub", None))
    config = with_data_dir(config)
    task = task_from_config(config.task, config.seed)  # a missing data folder stops before the heavy imports
    run_compress(task, config, args.out, overwrite=args.overwrite, push_to_hub=args.push_to_hub)
    return 0


def with_data_dir(config):
    """``config`` with the data folder actually read: ``--data-dir`` made absolute, else
    ``$FORGETLESS_DATA_DIR`` (none: the hub), so the saved recipe reruns on the same data."""
    import os
    from dataclasses import replace

    from ..data.registry import DATA_DIR_ENV

    folder = config.task.data_dir or os.environ.get(DATA_DIR_ENV) or None
    folder = str(Path(folder).expanduser().resolve()) if folder and Path(folder).expanduser().is_dir() else folder
    return replace(config, task=replace(config.task, data_dir=folder))


def run_compress(task, config, out, meta: dict | None = None, overwrite: bool = False, push_to_hub=None) -> dict:
    """``pipeline.compress`` with the command's printing and upload; returns the card."""
    from ..pipeline import compress
    from ..report.markdown import render_markdown
    from .export import push_saved

    card = compress(task, config, out, meta={"out": str(out), **(meta or {})}, overwrite=overwrite)
    print(render_markdown(card))
    print(f"report: {Path(out) / 'report.md'} (JSON: report.json, per-example: predictions.jsonl); "
          f"model: {Path(out) / 'model'} (model card: model/README.md)")
    push_saved(Path(out) / "model", push_to_hub)
    return card


def cmd_finetune(args, config) -> int:
    import transformers
    from accelerate import PartialState

    from ..kinds import kind_for
    from ..models.io import save_model
    from ..training.trainer import fine_tune
    from ..outputs import check_output, mark_output, output_lock
    from ..data.tasks import task_from_config

    out = check_output(args.out, command="finetune", inputs=cli_inputs(args))
    task = task_from_config(config.task, config.seed)
    kind = kind_for(task)
    state = PartialState()
    transformers.set_seed(config.seed)
    model, tokenizer = kind.load_model(config.model, task, config.seed)  # a bad model fails before OUT is made
    with output_lock(out):  # held by the first process of a distributed launch (outputs.distributed_follower)
        if state.is_main_process:
            mark_output(out, "finetune")
        model = fine_tune(model, tokenizer, kind.training_set(task, tokenizer), out / "checkpoints", config.train)
        if state.is_main_process:
            save_model(model, out / "model", tokenizer, metadata={"role": "fine-tuned", "task": task.name, "task_kind": task.kind,
                                                                   "kind": kind.name, "world_size": state.num_processes})
            print(f"saved {out / 'model'} (trained on {state.num_processes} process(es))")
    return 0


def cli_inputs(args) -> dict:
    """Every path a command reads, by the flag that named it (the output rule protects them)."""
    inputs = {f"--{dest.replace('_', '-')}": getattr(args, dest, None) for dest in ("model", "teacher", "base", "compressed")}
    inputs = {flag: value for flag, value in inputs.items() if isinstance(value, str)}
    inputs.update({"MODEL_PATH": getattr(args, "model_path", None), "RECIPE": getattr(args, "recipe", None)})
    inputs.update({"--train": getattr(args, "train_file", None), "--dev": getattr(args, "dev_file", None)})
    for item in getattr(args, "challenge", None) or []:
        inputs[f"--challenge {item}"] = str(item).partition("=")[2] or None
    return inputs


def cmd_evaluate(args, config) -> int:
    from dataclasses import replace

    from ..data.tasks import task_from_config
    from ..evaluate_saved import evaluate_saved

    if args.json:
        from ..outputs import check_output

        check_output(args.json, "--json", command="evaluate", inputs=cli_inputs(args), overwrite=args.overwrite,
                     is_file=True)
    task_config = config.task
    if task_config.name == "files" and not task_config.train_file:  # evaluation reads no training data
        task_config = replace(task_config, train_file=task_config.dev_file)
    task = task_from_config(task_config, config.seed)
    result = evaluate_saved(args.model_path, task, args.json, max_length=config.train.max_length,
                            overwrite=args.overwrite)
    for name, metrics in result["sets"].items():
        if "accuracy" in metrics:
            extra = (f"  hard {100 * (metrics['hard']['accuracy'] or 0):.1f}  easy "
                     f"{100 * (metrics['easy']['accuracy'] or 0):.1f}") if "hard" in metrics else ""
            print(f"{name:>12}: {100 * metrics['accuracy']:.2f}% (n={metrics['n']}){extra}")
        else:
            scores = ", ".join(f"{k} {metrics[k]:.2f}" for k in ("rougeL", "rouge1", "rouge2", "meteor") if k in metrics)
            print(f"{name:>12}: {scores} (n={metrics['n']})")
    if result.get("challenge_pooled") is not None:
        print(f"{'challenge':>12}: {100 * result['challenge_pooled']:.2f}% pooled over {', '.join(result['pooled_sets'])}")
    return 0


def cmd_bench(args, config) -> int:
    from ..metrics.intervals import speedup_interval
    from ..metrics.speed import SpeedConfig, compare_speed
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
    result["speedup"] = {part: speedup_interval(t["base"], t["compressed"]) for part, t in result["times_s"].items()}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'':<11} {'base':>12} {'compressed':>12} {'speedup':>8}  95% interval   ({result['mode']}, "
          f"{result['threads']} threads, {args.repeats} interleaved repeats)")
    for part, unit, key in (("latency", "ms", "latency_ms"), ("throughput", "/s", "throughput_per_s")):
        ratio = result["speedup"][part]
        shown = [result[key]["base"], result[key]["compressed"]]
        print(f"{part:<11} {shown[0]:>10.2f}{unit:<2} {shown[1]:>10.2f}{unit:<2} {ratio['speedup']:>7.2f}x  "
              f"[{ratio['low']:.2f}, {ratio['high']:.2f}]" + ("" if ratio["measurable"] else "  (not measurable)"))
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


def cmd_sweep(args, config) -> int:
    run_sweep_command(with_data_dir(config), args.out)
    return 0


def run_sweep_command(config, out, meta: dict | None = None) -> dict:
    """``sweep.run_sweep`` with the command's printing; returns the summary."""
    from ..data.tasks import task_from_config
    from ..outputs import check_output
    from ..sweep import run_sweep

    check_output(out, command="sweep", inputs={"--model": config.model if isinstance(config.model, str) else None})
    summary = run_sweep(task_from_config(config.task, config.seed), config, out, meta={"out": str(out), **(meta or {})})
    print((Path(out) / "sweep.md").read_text())
    print(f"sweep: {Path(out) / 'sweep.md'} and sweep.html (JSON: sweep.json, plots: {', '.join(summary.get('plots', []))}; "
          f"recipe: {Path(out) / 'recipe.yaml'})")
    return summary


def cmd_profile(args, config) -> int:
    run_profile_command(config, args.out, overwrite=args.overwrite)
    return 0


def run_profile_command(config, out, overwrite: bool = False, meta: dict | None = None) -> None:
    from ..metrics.profile import run_profile
    from ..report.profile import write_profile_report
    from ..models.io import load_model
    from ..models.loading import load_seq2seq
    from ..outputs import check_output, mark_output, output_lock
    from ..recipes.dump import dump_recipe
    from ..tree import to_recipe

    inputs = {"--model": config.model, "--compressed": config.compressed}
    out = check_output(out, command="profile", inputs=inputs, overwrite=overwrite)
    model, tokenizer = load_seq2seq(config.model, seed=config.seed)
    compressed = load_model(config.compressed) if config.compressed else None  # (model, tokenizer)
    with output_lock(out):
        mark_output(out, "profile")
        result = run_profile(model, tokenizer, str(out), compressed, tuple(config.seq_lengths),
                             tuple(config.head_fractions), tuple(config.ffn_fractions), config.batch_size,
                             config.num_beams, config.max_new_tokens, config.source_length, config.repeats)
        write_profile_report(result, out)
        dump_recipe({"command": "profile", "out": str(out), **(meta or {}), **to_recipe(config)}, out / "recipe.yaml")
    print(f"profile: {out / 'profile.md'} (JSON: profile.json, plot: profile.png; recipe: {out / 'recipe.yaml'})")


def cmd_report(args, config) -> int:
    """``forgetless report`` / ``compare``: pages made from saved runs, no model loaded, no torch."""
    from ..report.rerender import rerender

    paths = rerender(args.run)
    print(f"report: {paths['markdown']} and {paths['html']} (re-rendered from report.json)")
    return 0


def cmd_compare(args, config) -> int:
    from ..report.compare import compare_runs

    paths = compare_runs(args.runs, args.out, overwrite=args.overwrite)
    print(paths["markdown"].read_text())
    print(f"compare: {paths['markdown']} and {paths['html']} (plot: {paths['plot'].name})")
    return 0


def cmd_list(args, config) -> int:
    from ..data.tasks import TASKS
    from ..config import MODEL_TYPES
    from ..registry import METHODS, OBJECTIVES

    configs = lambda registry: [(n, registry.config_class(n)) for n in registry.names()]  # noqa: E731
    print("methods:    ", ", ".join(f"{n} ({'/'.join(c.task_types)})" for n, c in configs(METHODS)))
    print("objectives: ", ", ".join(f"{n} ({'/'.join(c.model_kinds)})" for n, c in configs(OBJECTIVES)))
    print("tasks:      ", ", ".join(TASKS.names()))
    print("model types:", ", ".join(MODEL_TYPES))
    return 0
