"""The one writer of a compression run's outputs, ``save_run``: the model folder (safetensors,
manifest, tokenizer, ``recipe.yaml`` and the model card), the report card (``report.json``), the
per-example ``predictions.jsonl``, the pages (``report.md``, ``report.html``, plots).

``forgetless compress`` and sweeps call ``pipeline.run_and_save`` (the output rule around ``run`` and
``save_run``); the Python API returns the ``pipeline.Run`` and writes nothing until ``Run.save(path)``.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .metrics.size import bits_per_parameter, disk_size
from .models.io import save_model
from .recipes.dump import drop_empty, dump_recipe
from .report.card import build_card, write_card
from .report.card_types import Card
from .report.honest import prediction_rows
from .report.model_card import model_card_summary, write_model_card
from .serving.speed import served_for_card
from .tree import to_recipe

def trained_on_task(training: dict) -> bool:
    """Whether the saved model was trained on the run's task (a fine-tuned base it starts from, a method's
    recovery, a distillation): epochs the compressed model saw (``pipeline._training``; unknown counts as
    trained). rtn, gptq, wanda … on a base taken as it is train nothing: the model is still the base."""
    return training.get("compressed_epochs") != 0.0


def save_run(run, out_dir, meta: dict | None = None) -> Card:
    """Write the outputs of ``run`` (a ``pipeline.Run``) into ``out_dir`` (module docstring); returns
    the card written. The card reports the saved model folder's sizes, measured here and passed to
    ``build_card`` as values (the run's measurements stay as they were). ``meta`` (name, paper, scale …
    of a recipe file; ``out``) goes into the resolved recipe."""
    out = Path(out_dir)
    measured = run.measurements
    model_dir = save_model(run.model, out / "model", run.tokenizer, metadata={
        "method": measured.method.describe(), "objective": measured.objective.config.name,
        "task": measured.task.name, "task_kind": measured.task.kind, "kind": measured.kind.name,
        "trained_on_task": trained_on_task(measured.training),
        "artifacts": measured.method.artifacts(), "then": [m.describe() for m in measured.then]})
    served = served_for_card(measured.speed, measured.kind,
                             ((measured.sizes.get("base") or {}).get("source") or {}).get("path"), model_dir)
    if served is not None:  # the saved folders in vLLM (serving/speed.py), beside the in-process timing
        measured = replace(measured, speed={**measured.speed, "served": served})
    saved = {"disk_bytes": disk_size(model_dir), "path": str(model_dir),
             "bits_per_parameter": bits_per_parameter(model_dir, measured.sizes["compressed"]["total"])}
    recipe = drop_empty({"command": "compress", **(meta or {}), **to_recipe(measured.run)})
    dump_recipe(recipe, model_dir / "recipe.yaml")  # beside the model and in the card: `forgetless run` reruns it
    card = write_card(build_card(measured, saved_model=saved, recipe=recipe), out,
                      extra_plots=measured.method.plots(out),
                      prediction_rows=prediction_rows(measured.task, measured.predictions))
    write_model_card(model_dir, model_card_summary(card))
    return card
