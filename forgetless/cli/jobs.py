"""The commands that run a job into an output folder: ``compress`` (and its alias and ``demo``),
``sweep`` and ``profile``, and a resolved recipe of any of them (``run_resolved``); ``show_run``
prints what a compress run wrote. Heavy at import time (the
pipeline): the command line imports this module only when one of these commands runs."""
from __future__ import annotations

from pathlib import Path

import torch

from ..data.tasks import task_from_config
from ..export import push_to_hub
from ..metrics.profile import run_profile
from ..models.io import load_model
from ..models.loading import load_seq2seq
from ..outputs import check_output, claim_output, mark_output
from ..pipeline import Run, run_and_save
from ..recipes.dump import dump_recipe
from ..report.markdown import render_markdown
from ..report.profile import write_profile_report
from ..sweep import run_sweep
from ..tree import to_recipe
from ..validate import check_before_loading
from .checks import check_push_target, check_report_to
from .parser import with_data_read


def cmd_compress(args, config) -> int:
    check_report_to(config.train.report_to)
    check_push_target(getattr(args, "push_to_hub", None))
    config = with_data_read(config)
    check_before_loading(config)  # options against the model's config.json, hub-only tasks offline: in seconds
    task = task_from_config(config.task, config.seed)  # a missing data folder stops before any work
    show_run(run_and_save(task, config, args.out, meta={"out": str(args.out)}, overwrite=args.overwrite),
             args.out, args.push_to_hub)
    return 0


def show_run(run: Run, out, push: str | None = None) -> None:
    """Print the report card of a run saved in ``out`` and where its files are; upload its model."""
    print(render_markdown(run.card))
    print(f"report: {Path(out) / 'report.md'} (JSON: report.json, per-example: predictions.jsonl); "
          f"model: {Path(out) / 'model'} (model card: model/README.md)")
    if push is not None:
        print(f"pushed {Path(out) / 'model'} to {push}: {push_to_hub(Path(out) / 'model', push)}")


def run_resolved(recipe: dict):
    """Run a resolved recipe (``recipe.run_recipe``): the card of a compress run, the summary of a
    sweep, None for a profile."""
    if recipe.get("threads"):
        torch.set_num_threads(int(recipe["threads"]))
    config, out = recipe["config"], recipe["out"]
    meta = {k: v for k, v in recipe.items() if k not in ("config", "command", "out")}
    if recipe["command"] == "compress":
        run = run_and_save(task_from_config(config.task, config.seed), config, out, meta={"out": str(out), **meta})
        show_run(run, out)
        return run.card.to_json()
    if recipe["command"] == "sweep":
        return sweep_job(config, out, meta)
    return profile_job(config, out, meta=meta)


def cmd_sweep(args, config) -> int:
    sweep_job(with_data_read(config), args.out)
    return 0


def sweep_job(config, out, meta: dict | None = None) -> dict:
    """``sweep.run_sweep`` into ``out`` with the command's printing; returns the summary."""
    check_output(out, command="sweep", inputs={"--model": config.model if isinstance(config.model, str) else None})
    summary = run_sweep(task_from_config(config.task, config.seed), config, out, meta={"out": str(out), **(meta or {})})
    print((Path(out) / "sweep.md").read_text())
    print(f"sweep: {Path(out) / 'sweep.md'} and sweep.html (JSON: sweep.json, plots: {', '.join(summary.get('plots', []))}; "
          f"recipe: {Path(out) / 'recipe.yaml'})")
    return summary


def cmd_profile(args, config) -> int:
    profile_job(config, args.out, overwrite=args.overwrite)
    return 0


def profile_job(config, out, overwrite: bool = False, meta: dict | None = None) -> None:
    """The encoder-decoder speed profile into ``out`` (``profile.json``, ``profile.md``, plot, recipe)."""
    out = check_output(out, command="profile", inputs={"--model": config.model, "--compressed": config.compressed},
                       overwrite=overwrite)
    model, tokenizer = load_seq2seq(config.model, seed=config.seed)
    compressed = load_model(config.compressed) if config.compressed else None  # (model, tokenizer)
    with claim_output(out):
        mark_output(out, "profile")
        result = run_profile(model, tokenizer, str(out), compressed, tuple(config.seq_lengths),
                             tuple(config.head_fractions), tuple(config.ffn_fractions), config.batch_size,
                             config.num_beams, config.max_new_tokens, config.source_length, config.repeats)
        write_profile_report(result, out)
        dump_recipe({"command": "profile", "out": str(out), **(meta or {}), **to_recipe(config)}, out / "recipe.yaml")
    print(f"profile: {out / 'profile.md'} (JSON: profile.json, plot: profile.png; recipe: {out / 'recipe.yaml'})")
