"""Hand-made report cards for the renderers' tests: ``typed_card(partial)`` fills the sections a test leaves out
with a small valid classification card (an LLM suite's when the partial has ``llm``) and returns the ``Card``,
so a test states only the numbers it checks (``typed_comparison``: a ``forgetless.evaluate`` comparison likewise). Each section of the partial replaces the template's field by
field (``{"bias": {"f_bias": 1.5}}`` keeps the template's gaps); ``sets`` and the free JSON sections replace
the template's whole."""
from __future__ import annotations

import copy
import dataclasses

from forgetless.report.card_types import Card, Comparison, Paired

ROLE_METRICS = {"accuracy": 0.5, "n": 2}
TIMED = {"timed": True, "setting": "auto", "runtime": "torch", "meaningful": True,
         "latency_ms": {"base": 1.0, "compressed": 1.0, "speedup": 1.0},
         "throughput_per_s": {"base": 1.0, "compressed": 1.0, "speedup": 1.0}}
TEMPLATE = {
    "schema": "forgetless-report-2", "kind": {"task": "classification", "model": "classifier"},
    "task": {"name": "sst2", "protocol": "dev", "metric": "accuracy", "pooled_challenges": [], "sizes": {}},
    "method": {"name": "magnitude", "config": {}, "structured": False, "quantizes": False, "objective": "ce",
               "objective_options": {}, "student_init": "teacher", "train": {}, "then": [], "sections": {},
               "layers": []},
    "model": {"compressed": "tiny", "model_type": "bert"},
    "headline": {"metric": "accuracy", "base": 0.5, "compressed": 0.5, "kept": 1.0},
    "sets": {"dev": {"base": dict(ROLE_METRICS), "compressed": dict(ROLE_METRICS)}},
    "challenge": {"sets": [], "base": None, "compressed": None},
    "bias": {"gap_base": None, "gap_compressed": None, "f_bias": None},
    "hard_easy": {"base": None, "compressed": None}, "calibration": None,
    "params": {"base": {"total": 100}, "compressed": {"total": 100}, "ratio": 1.0, "nonzero_ratio": 1.0,
               "stored": None},
    "speed": TIMED,
    "deployment": {"runtime": "torch", "base_runtime": "torch (fp32)", "quantization": [],
                   "agreement": {"sets": {}, "pooled": None, "n": 0}},
    "intervals": None, "training": None, "warnings": [], "notes": [], "run": {}, "seed": 0, "command": "",
    "environment": {"created": "2026-11-29T00:00:00+00:00", "versions": {}, "hardware": {}, "compress_memory": None,
                    "run_memory": None},
}
INTERVALS = {"method": "percentile bootstrap", "confidence": 0.95, "n_resamples": 1000, "seed": 0, "sets": {},
             "hard_easy": None, "challenge": None, "f_bias": None, "delta": None}
LLM = {"engine": {}, "tasks": {}, "headline_tasks": [], "headline": None, "pooled": None, "pairs": []}
WHOLE = {"sets", "zero_shot", "robustness", "provenance", "recipe", "run", "language_model", "calibration"}


def typed_card(partial: dict) -> Card:
    """The ``Card`` of ``partial`` (a card's JSON, any sections left out) on the template above."""
    return Card.from_json(_filled(partial))


def _filled(partial: dict) -> dict:
    """The template's JSON with ``partial``'s sections put in."""
    data = copy.deepcopy(TEMPLATE)
    if "llm" in partial:  # an LLM suite: no classifier sections, a causal LM's prompt
        data.update(kind={"task": "lm-eval", "model": "causal-lm"}, challenge=None, bias=None, hard_easy=None,
                    zero_shot={})
        data["llm"] = copy.deepcopy(LLM)
    if "intervals" in partial:
        data["intervals"] = copy.deepcopy(INTERVALS)
    if (partial.get("speed") or {}).get("timed") is False:
        data["speed"] = {key: value for key, value in TIMED.items() if key not in ("latency_ms", "throughput_per_s")}
    for key, value in partial.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict) and key not in WHOLE:
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    for part in ("latency_ms", "throughput_per_s"):  # a timed speed holds both figures and the speedup
        if data["speed"].get(part) is not None:
            data["speed"][part] = {**TIMED[part], **data["speed"][part]}
    return data


def typed_comparison(partial: dict) -> Comparison:
    """The ``Comparison`` of ``partial`` (its JSON, any sections left out), as ``typed_card`` fills a card."""
    card = _filled(partial)
    paired = {name: card[name] for name in (f.name for f in dataclasses.fields(Paired)) if name in card}
    return Comparison.from_json({**paired, "agreement": None, "params": {}})
