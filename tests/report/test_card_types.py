"""The typed report card (``report/card_types.py``): JSON round trip, the shipped JSON Schema generated from
the types, ``forgetless schema``, and one error naming the first value that does not fit."""
from __future__ import annotations

import copy
import json

import jsonschema
import pytest

from forgetless.cli import main
from forgetless.report.card_types import SCHEMA_FILE, Card
from forgetless.report.json_types import CardTypeError


def _card() -> dict:
    """A small generation card, written out by hand (every required section, no optional one)."""
    metrics = {"rouge1": 40.0, "rouge2": 10.0, "rougeL": 30.0, "meteor": 20.0, "n": 8}
    return {
        "schema": "forgetless-report-2", "kind": {"task": "generation", "model": "seq2seq"},
        "task": {"name": "samsum", "protocol": "dev", "metric": "rougeL", "pooled_challenges": [],
                 "sizes": {"train": 16, "dev": 8}},
        "method": {"name": "nash", "config": {"decoder_layers": 2}, "structured": True, "quantizes": False,
                   "objective": "ce", "objective_options": {}, "student_init": "teacher", "train": {"epochs": 1},
                   "then": [], "sections": {}, "layers": []},
        "model": {"compressed": "tiny-t5", "model_type": "t5"},
        "headline": {"metric": "rougeL", "base": 30.0, "compressed": 24.0, "kept": 0.8},
        "sets": {"dev": {"base": dict(metrics), "compressed": {**metrics, "rougeL": 24.0}}},
        "challenge": None, "bias": None, "hard_easy": None, "calibration": None,
        "params": {"base": {"total": 100}, "compressed": {"total": 60}, "ratio": 0.6, "nonzero_ratio": 0.6,
                   "stored": None},
        "speed": {"timed": False, "setting": "auto", "runtime": "torch", "meaningful": True,
                  "why_not_timed": "speed not timed: --speed none"},
        "deployment": {"runtime": "torch", "base_runtime": "torch (fp32)", "quantization": [],
                       "agreement": {"sets": {"dev": 0.5}, "pooled": 0.5, "n": 8}},
        "intervals": {"method": "percentile bootstrap", "confidence": 0.95, "n_resamples": 1000, "seed": 0,
                      "sets": {}, "hard_easy": None, "challenge": None, "f_bias": None, "delta": None},
        "training": {"base_epochs": 1, "student_init": "teacher", "fine_tunes": [], "compressed_extra_epochs": 0,
                     "compressed_epochs": 1, "base": "fine-tune"},
        "warnings": [], "notes": [], "run": {"seed": 0}, "seed": 0, "command": "forgetless compress",
        "environment": {"created": "2026-11-28T00:00:00+00:00", "versions": {}, "hardware": {},
                        "compress_memory": None, "run_memory": None},
    }


def test_card_round_trips_and_reads_as_attributes():
    data = _card()
    card = Card.from_json(data)
    assert card.to_json() == data and Card.from_json(card.to_json()) == card
    assert card.headline.kept == 0.8 and card.kind.model == "seq2seq" and card.deployment.agreement.n == 8
    assert isinstance(card.training.base_epochs, float)  # a JSON int is a valid float, read as one
    assert "llm" not in card.to_json() and "plots" not in card.to_json()  # optional sections: absent, not null


def test_the_shipped_schema_is_the_types_schema_and_forgetless_schema_prints_it(capsys):
    shipped = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert shipped == Card.json_schema(), (
        "regenerate: python -c \"import json; from forgetless.report.card_types import Card, SCHEMA_FILE; "
        "SCHEMA_FILE.write_text(json.dumps(Card.json_schema(), indent=1) + chr(10))\"")
    jsonschema.Draft202012Validator.check_schema(shipped)
    jsonschema.validate(_card(), shipped)
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == shipped


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(extra=1), "card: unknown key(s) extra"),
    (lambda c: c["headline"].pop("kept"), "card.headline: missing 'kept'"),
    (lambda c: c.update(seed="0"), "card.seed: expected int, got str '0'"),
    (lambda c: c["kind"].update(task="regression"), "card.kind.task: str 'regression' is not one of"),
    (lambda c: c["sets"]["dev"]["base"].update(rougeL="high"), "card.sets.dev.base.rougeL: expected float, got str"),
    (lambda c: c.update(bias={"gap_base": 0.1, "gap_compressed": 0.2, "f_bias": 2.0}),
     "section bias must be present exactly for classification tasks"),
    (lambda c: c["speed"].update(timed=True), "a timed speed holds latency_ms and throughput_per_s"),
    (lambda c: c["deployment"].update(runtime="onnxruntime"), "deployment.runtime 'onnxruntime' != speed.runtime"),
])
def test_a_card_that_does_not_fit_is_one_error_naming_the_value(change, message):
    data = copy.deepcopy(_card())
    change(data)
    with pytest.raises(CardTypeError) as error:
        Card.from_json(data)
    assert message in str(error.value)


def test_the_schema_rejects_what_the_types_reject():
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
    for change in (lambda c: c.update(extra=1), lambda c: c["headline"].pop("kept"), lambda c: c.update(seed="0"),
                   lambda c: c["speed"].update(threads="one"), lambda c: c["intervals"].update(n_resamples=1.5)):
        data = copy.deepcopy(_card())
        change(data)
        assert not validator.is_valid(data)
        with pytest.raises(CardTypeError):
            Card.from_json(data)


def test_a_card_built_in_memory_is_written_as_its_types_say():
    """``build_card`` makes the ``Card`` directly (no JSON round trip): an int in a float field (epochs read from
    a recipe) is written as the float the schema says, the same bytes as the card read back."""
    import dataclasses

    card = Card.from_json(_card())
    built = dataclasses.replace(card, training=dataclasses.replace(card.training, base_epochs=1, compressed_epochs=2))
    written = built.to_json()
    assert isinstance(written["training"]["base_epochs"], float) and written["training"]["compressed_epochs"] == 2.0
    assert isinstance(written["seed"], int) and written["training"]["compressed_extra_epochs"] == 0.0
    assert json.dumps(written) == json.dumps(Card.from_json(written).to_json())
