"""The report card: what compression cost, in one typed document (``report/card_types.Card``, its JSON
Schema shipped as ``report/report.schema.json``: ``forgetless schema``) and its pages, for every kind of
task and model. ``build_card`` is the one place a card is assembled, from one ``Measurements`` object
(``report/measurements.py``) and what saving measured; ``write_card`` adds the names of the files it writes
beside it and writes ``report.json`` only when it fits the schema.
"""
from __future__ import annotations

import math
from dataclasses import asdict, replace
from pathlib import Path

from ..metrics.bias import f_bias, relative_gap
from ..metrics.memory import run_peak
from ..fsutil import atomic_write_json, atomic_write_text
from . import honest
from .environment import environment
from .html import render_html
from ..tree import to_recipe
from .card_types import (SCHEMA, Agreement, Bias, Calibration, Card, Challenge, Deployment, Environment, HardEasy,
                         Headline, Kind, LanguageModel, LlmSuite, MethodInfo, ModelOrigin, Paired, Params,
                         RolePair, Speed, TaskInfo, Training)
from .measurements import Measurements
from .naming import card_title
from .layers import layer_summary
from .markdown import render_markdown
from .plots import accuracy_plot
from .summary import summary_panel
from .predictions import write_predictions
from ..data.task_kinds import task_kind

PREDICTIONS_FILE = "predictions.jsonl"


def comparison(task, results: dict, predictions: dict | None, seed: int = 0, calibration: dict | None = None,
               training: dict | None = None) -> Paired:
    """The paired comparison of two models (roles ``base`` and ``compressed``) on every set of
    ``task``: ``task``, ``headline``, ``sets``, ``challenge``, ``bias``, ``hard_easy``, ``calibration``,
    ``intervals``, ``warnings`` and, where the task and model have them, ``llm``, ``zero_shot`` and
    ``language_model`` (``card_types.Paired``). ``results``: each role's evaluation (``kind.evaluate``
    without predictions); with per-example ``predictions`` the comparison gets intervals and warnings.
    ``forgetless.evaluate(model, data, base=)`` makes its ``Comparison`` of it; ``build_card`` its card."""
    sets = {name: RolePair(base=results["base"]["sets"][name], compressed=results["compressed"]["sets"][name])
            for name in results["base"]["sets"]}
    labelled = task_kind(task).labelled
    metric = "accuracy" if labelled else task.metric
    section = task_kind(task).compare(task, results, predictions, seed)  # the kind's own section (an LLM suite's)
    llm = None if section is None else LlmSuite(**section)
    if llm is not None:  # an LLM suite: the mean accuracy over the tasks above chance
        base_dev, comp_dev = ((llm.headline or {}).get(role, {}).get("value") for role in ("base", "compressed"))
    else:
        base_dev, comp_dev = sets["dev"].base.get(metric), sets["dev"].compressed.get(metric)
    bias = bias_section(results) if labelled else None
    warnings = honest.collect(task, results, predictions, bias, training) if predictions else []
    if bias is not None:
        bias["meaningful"] = honest.f_bias_meaningful(bias, warnings)
    if llm is not None:
        warnings += (llm.divergence or {}).get("warnings", [])  # a base that answers nothing
        warnings += [w for t in llm.tasks.values() for w in t.get("warnings", [])]  # generation tasks
    return Paired(
        task=TaskInfo(name=task.name, protocol=task.protocol, metric=metric, pooled_challenges=task.pooled if labelled
                      else [], sizes={"train": len(task.train), **{k: v.base["n"] for k, v in sets.items()}}),
        headline=Headline(metric=metric, base=base_dev, compressed=comp_dev, kept=comp_dev / base_dev if base_dev
                          else None),
        sets=sets,
        challenge=Challenge(sets=task.pooled, base=results["base"]["challenge_pooled"],
                            compressed=results["compressed"]["challenge_pooled"]) if labelled else None,
        bias=None if bias is None else Bias(**bias),
        hard_easy=HardEasy(**{role: _hard_easy(results[role]["sets"]["dev"]) for role in ("base", "compressed")})
        if labelled else None,
        calibration=None if calibration is None else Calibration(**calibration),
        intervals=honest.intervals_section(task, predictions, seed) if predictions else None,
        warnings=warnings,
        llm=llm,
        # causal-lm: the prompt and scoring both models were evaluated with
        zero_shot={**results["base"]["zero_shot"], "truncated_prompts": {
            role: results[role]["zero_shot"]["truncated_prompts"] for role in ("base", "compressed")}}
        if "zero_shot" in results["base"] else None,
        language_model=LanguageModel(**{role: results[role]["language_model"] for role in ("base", "compressed")})
        if "language_model" in results["base"] else None,  # causal-lm: held-out perplexity of both models
    )


def build_card(measured: Measurements, saved_model: dict | None = None, recipe: dict | None = None) -> Card:
    """The card of one run, from everything it measured: the paired comparison of base and compressed
    (``comparison``), the method, sizes, speed, training and provenance. ``saved_model``: what saving
    measured of the compressed model's folder (``disk_bytes``, ``path``, ``bits_per_parameter``);
    ``recipe``: the resolved recipe as saved (default: the run's)."""
    from ..metrics.size import stored_size  # torch: not imported to re-render a saved card

    run, method = measured.run, measured.method
    compared = comparison(measured.task, measured.results, measured.predictions, run.seed, measured.calibration,
                          measured.training)
    sizes = {**measured.sizes, "compressed": {**measured.sizes["compressed"], **(saved_model or {})}}
    leak = honest.run_calibration_leak(measured.task, run, [method, *measured.then], measured.kind,
                                       measured.calibration_texts)
    methods = [method, *measured.then]
    sections = [m.report_section() or {} for m in methods]  # each method's own card section (methods/base.py)
    runtime = measured.run.eval.runtime
    speed = {**measured.speed, **({"timing": honest.timing_section(measured.speed, run.seed)}
                                  if measured.speed.get("timed", True) else {}),
             "runtime": runtime, "meaningful": bool(measured.speed["meaningful"])}
    return Card(
        **{**compared.sections(), "warnings": compared.warnings + ([leak] if leak else [])},
        schema=SCHEMA,
        kind=Kind(task=measured.task.kind, model=measured.kind.name),
        method=MethodInfo(**method.describe(), structured=method.config.structured,
                          quantizes=method.config.quantizes, objective=measured.objective.config.name,
                          objective_options=asdict(run.objective), student_init=run.student_init,
                          train=asdict(run.train),
                          then=[{**m.describe(), "structured": m.config.structured, "quantizes": m.config.quantizes}
                                for m in measured.then],
                          sections={name: value for section in sections for name, value in section.items()},
                          layers=layer_summary(methods)),
        model=ModelOrigin(**measured.model),
        params=Params(**sizes, ratio=sizes["compressed"]["total"] / sizes["base"]["total"],
                      nonzero_ratio=sizes["compressed"]["nonzero"] / sizes["base"]["nonzero"],
                      stored=stored_size(sizes["compressed"].get("path"))),
        speed=Speed(**speed),
        deployment=_deployment(sections, runtime, measured.agreement),
        training=None if measured.training is None else Training(**measured.training),
        notes=list(measured.notes),
        run=to_recipe(run),
        seed=run.seed,
        command=measured.command,
        environment=Environment(**environment(measured.device), compress_memory=measured.compress_memory,
                                run_memory=run_peak()),  # the whole run's peak so far: load, compress, evaluate, time
        robustness=measured.robustness or None,
        provenance=measured.provenance or None,
        recipe=recipe or measured.recipe or None,
    )


def _deployment(sections: list[dict], runtime: str, agreement: dict) -> Deployment:
    """``deployment``: the runtime, each quantizing method's ``quantization`` section and the deployed model's
    agreement with the fp32 base. (``speed.meaningful``, set by the pipeline, ``metrics/speed.unchanged_reason``:
    a speedup can be real when the dense computation changed (layers, heads, widths removed, int8 / bf16
    kernels, another runtime); quantization records whether it expected one (``methods/quantize.py``).)"""
    quantized = [section["quantization"] for section in sections if "quantization" in section]
    return Deployment(runtime=runtime, base_runtime="torch (fp32)", quantization=quantized,
                      agreement=Agreement(**agreement))


def bias_section(results: dict) -> dict:
    """gap and F_bias from dev accuracy and the pooled challenge accuracy of both models."""
    base_dev = results["base"]["sets"]["dev"]["accuracy"]
    comp_dev = results["compressed"]["sets"]["dev"]["accuracy"]
    base_adv, comp_adv = results["base"]["challenge_pooled"], results["compressed"]["challenge_pooled"]
    if base_adv is None:
        return {"gap_base": None, "gap_compressed": None, "f_bias": None}
    if base_dev <= 0 or comp_dev <= 0:  # a relative gap needs a positive dev accuracy
        return {"gap_base": None, "gap_compressed": None, "f_bias": None,
                "undefined": "a model has 0% dev accuracy: the relative gap (eq. 1) is undefined"}
    value = f_bias(base_dev, base_adv, comp_dev, comp_adv)
    return {"gap_base": relative_gap(base_dev, base_adv), "gap_compressed": relative_gap(comp_dev, comp_adv),
            "f_bias": None if math.isnan(value) else value}


def _hard_easy(metrics: dict) -> dict | None:
    if "hard" not in metrics:
        return None
    return {"hard": metrics["hard"]["accuracy"], "easy": metrics["easy"]["accuracy"],
            "n_hard": metrics["hard"]["n"], "n_easy": metrics["easy"]["n"], "gap": metrics.get("easy_hard_gap")}


def write_card(card: Card, out_dir: str | Path, extra_plots: list | None = None,
               prediction_rows: list[dict] | None = None) -> Card:
    """Write ``report.json``, ``predictions.jsonl`` when ``prediction_rows`` are given, and the
    pages (:func:`render_card`); returns the card as written (with the names of those files).
    ``report.json`` is written only when its JSON reads back as a card (``Card.from_json``: every type
    and bound of the schema)."""
    out_dir = Path(out_dir)
    if prediction_rows is not None:
        write_predictions(out_dir / PREDICTIONS_FILE, prediction_rows)
        card = replace(card, predictions=PREDICTIONS_FILE)
    card, _ = render_card(card, out_dir, extra_plots)
    data = card.to_json()
    Card.from_json(data)  # the schema's check of what is written
    atomic_write_json(out_dir / "report.json", data)
    return card


def render_card(card: Card, out_dir: str | Path, extra_plots: list | None = None) -> tuple[Card, dict[str, Path]]:
    """``metrics.png``, ``report.md`` (which links the plots) and ``report.html`` (one
    self-contained file: the summary panel on top, plots embedded); returns the card with its ``plots``
    and the written pages. ``forgetless report`` calls this alone to re-render a saved card
    (``report/rerender.py``)."""
    out_dir = Path(out_dir)
    plots = [accuracy_plot(card, out_dir / "metrics.png")] + [Path(p) for p in (extra_plots or [])]
    card = replace(card, plots=[p.name for p in plots])
    atomic_write_text(out_dir / "report.md", render_markdown(card))
    title = f"forgetless report card: {card_title(card)}"
    page = render_html(render_markdown(card, summary=False), out_dir, title, summary_panel(card))
    atomic_write_text(out_dir / "report.html", page)
    return card, {"markdown": out_dir / "report.md", "html": out_dir / "report.html"}
