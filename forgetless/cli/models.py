"""The commands on a model: ``finetune`` (train and save one), ``evaluate`` (its scores on a task),
``bench`` (its speed against its base) and ``export`` (ONNX, the hub). Heavy at import time
(torch, transformers): the command line imports this module only when one of them runs; the Trainer
stack (``transformers.trainer_callback``, which imports peft) only ``finetune`` imports."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import transformers
from accelerate import PartialState

from ..arguments import run_device
from ..data.tasks import task_from_config
from ..errors import ConfigError, OptionError
from ..evaluate_saved import evaluate_saved
from ..export import export_onnx, push_to_hub
from ..kinds import kind_for
from ..metrics.intervals import speedup_interval
from ..metrics.speed import SpeedConfig, compare_speed
from ..models.adapters import get_adapter
from ..models.io import load_model, save_model
from ..offline import check_offline_tasks
from ..models.loading import load_classifier, load_seq2seq
from ..outputs import check_output, claim_output, mark_output
from ..report.model_card import write_model_card
from ..validate import model_dims, model_type_of
from .checks import check_push_target


def cli_inputs(args) -> dict:
    """Every path a command reads, by the flag that named it (the output rule protects them)."""
    inputs = {f"--{dest.replace('_', '-')}": getattr(args, dest, None) for dest in ("model", "teacher", "base", "compressed")}
    inputs = {flag: value for flag, value in inputs.items() if isinstance(value, str)}
    inputs.update({"MODEL_PATH": getattr(args, "model_path", None), "RECIPE": getattr(args, "recipe", None)})
    inputs.update({"--train": getattr(args, "train_file", None), "--dev": getattr(args, "dev_file", None)})
    for item in getattr(args, "challenge", None) or []:
        inputs[f"--challenge {item}"] = str(item).partition("=")[2] or None
    return inputs


def cmd_finetune(args, config) -> int:
    from ..training.trainer import fine_tune  # the Trainer stack (peft: ~10 s of CPU) only for a command that trains

    out = check_output(args.out, command="finetune", inputs=cli_inputs(args))
    task = task_from_config(config.task, config.seed)
    kind = kind_for(task)
    state = PartialState()
    transformers.set_seed(config.seed)
    model, tokenizer = kind.load_model(config.model, task, config.seed)  # a bad model fails before OUT is made
    with claim_output(out):  # held by the first process of a distributed launch (outputs.distributed_follower)
        if state.is_main_process:
            mark_output(out, "finetune")
        model = fine_tune(model, tokenizer, kind.training_set(task, tokenizer), out / "checkpoints", config.train)
        if state.is_main_process:
            save_model(model, out / "model", tokenizer, metadata={"role": "fine-tuned", "task": task.name, "task_kind": task.kind,
                                                                   "kind": kind.name, "world_size": state.num_processes})
            write_model_card(out / "model")
            print(f"saved {out / 'model'} (trained on {state.num_processes} process(es))")
    return 0


def cmd_evaluate(args, config) -> int:
    given = next(((name, value) for name in ("divergence_prompts", "divergence_file", "divergence_max_new_tokens")
                  if (value := getattr(config.task, name)) not in (None, 0)), None)
    if given:  # a comparison along the base's answers: two models, this scores one
        raise OptionError(f"--{given[0].replace('_', '-')} {given[1]}: compares a compressed model with its base "
                          "along the base's own answers; evaluate scores one model (forgetless compress, or "
                          "forgetless.evaluate(model, task, base=...) in Python)")
    device = run_device(config.train.device)  # --device cuda without a GPU: one line before any work
    if args.json:
        check_output(args.json, "--json", command="evaluate", inputs=cli_inputs(args), overwrite=args.overwrite,
                     is_file=True)
    task_config = config.task
    if task_config.name == "files" and not task_config.train_file:  # evaluation reads no training data
        task_config = replace(task_config, train_file=task_config.dev_file)
    check_offline_tasks(task_config)  # a hub-only LLM task while the hub is off: one line now, not minutes later
    task = task_from_config(task_config, config.seed)
    result = evaluate_saved(args.model_path, task, args.json, batch_size=config.eval.batch_size,
                            max_length=config.train.max_length, overwrite=args.overwrite, device=device)
    for line in score_lines(result):
        print(line)
    return 0


def score_lines(result: dict) -> list[str]:
    """``evaluate``'s printout: per set its metric (an lm-eval task's own: acc_norm, acc, word perplexity),
    the pooled challenge accuracy, a causal LM's held-out perplexity with the tokens it scored."""
    lines = []
    for name, metrics in result["sets"].items():
        metric = metrics.get("metric", "accuracy")
        if "accuracy" in metrics:
            extra = (f"  hard {100 * (metrics['hard']['accuracy'] or 0):.1f}  easy "
                     f"{100 * (metrics['easy']['accuracy'] or 0):.1f}") if "hard" in metrics else ""
            shown = "" if metric == "accuracy" else f"{metric} "
            lines.append(f"{name:>12}: {shown}{100 * metrics['accuracy']:.2f}% (n={metrics['n']}){extra}")
        elif metric == "word_perplexity" and "word_perplexity" in metrics:
            lines.append(f"{name:>12}: word perplexity {metrics['word_perplexity']:.2f} (n={metrics['n']} documents)")
        else:
            scores = ", ".join(f"{k} {metrics[k]:.2f}" for k in ("rougeL", "rouge1", "rouge2", "meteor") if k in metrics)
            lines.append(f"{name:>12}: {scores} (n={metrics['n']})")
    if result.get("challenge_pooled") is not None:
        lines.append(f"{'challenge':>12}: {100 * result['challenge_pooled']:.2f}% pooled over "
                     f"{', '.join(result['pooled_sets'])}")
    lm = result.get("language_model")
    if lm:
        how = f" ({lm['scored']:,} tokens scored in {lm['windows']} windows of {lm['window']})" if "scored" in lm else ""
        lines.append(f"{'perplexity':>12}: {lm['perplexity']:.2f} on {Path(str(lm['file'])).name}{how}")
    return lines


def cmd_bench(args, config) -> int:
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
    compressed, base = model_type_of(args.model_path), model_type_of(args.base)
    if compressed and base and compressed != base:
        raise OptionError(f"--base {args.base}: is a {base} model, MODEL_PATH {args.model_path} a {compressed}; "
                          "give the model it was compressed from")
    for flag, name in (("MODEL_PATH", args.model_path), ("--base", args.base)):
        positions = (model_dims(name) or {}).get("max_positions")
        if positions and args.seq_len > positions:
            raise OptionError(f"--seq-len {args.seq_len}: {flag} {name} takes at most {positions} tokens; "
                              f"valid 2..{positions}")


def cmd_export(args, config) -> int:
    if args.format is None and args.push_to_hub is None:
        raise ConfigError("export: nothing to do; give --format onnx and / or --push-to-hub REPO")
    check_push_target(args.push_to_hub)
    model_dir = Path(args.model_path)
    if args.format == "onnx":
        out = Path(args.out) if args.out else model_dir.parent / "onnx"
        result = export_onnx(model_dir, out, opset=args.opset, atol=args.atol, overwrite=args.overwrite)
        print(f"exported {model_dir} ({result['kind']}) to {out}: " + ", ".join(
            f"{name} {Path(path).name}" for name, path in result["files"].items()))
        print("verified with onnxruntime against PyTorch on 2 batches of different shapes: max |diff| "
              + ", ".join(f"{graph} {diff:.2e}" for graph, diff in result["per_graph"].items())
              + f" (tolerance {args.atol:g})")
    if args.push_to_hub is not None:
        print(f"pushed {model_dir} to {args.push_to_hub}: {push_to_hub(model_dir, args.push_to_hub)}")
    return 0
