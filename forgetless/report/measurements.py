"""Everything one compress run measured and decided: the one input of ``report.card.build_card``.

``pipeline.run`` makes it after evaluation and it does not change afterwards (frozen): what saving
measures (the model folder's size, the resolved recipe with its output folder) goes to ``build_card``
as values, and ``write_card`` adds only the names of the files it writes beside the card. Evaluation
computes (``metrics/``: scores, calibration numbers, prediction agreement), the report renders.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Measurements:
    """What ``build_card`` turns into the report card (``report/card_types.Card``).

    ``results``: the kind's evaluation of each role (``{"base" | "compressed": {sets,
    challenge_pooled, [zero_shot], [language_model]}}``, predictions removed); ``predictions``: the
    per-example predictions of each role and set; ``sizes``: parameter counts and disk sizes of
    both models; ``speed``: the kind's timing of base vs compressed; ``training``: epochs each model
    saw (``report.honest.training_section``); ``calibration``: ``metrics.calibration``'s section
    (None for generation); ``agreement``: ``metrics.runtime.agreement`` of the deployed model
    with the base; ``model``: where the compressed model started from and its ``model_type``;
    ``provenance``: where a converted base's weights came from; ``recipe``: the resolved recipe;
    ``compress_memory``: the compression step's peak memory (``metrics.memory.PeakMemory``); ``device``:
    the device every step ran on (``--device`` resolved: ``arguments.run_device``);
    ``calibration_texts``: the ``--calibration-data`` texts the methods read (the card warns when they
    are in what it evaluates, ``honest.run_calibration_leak``)."""

    task: object
    run: object
    method: object
    objective: object
    kind: object
    results: dict
    sizes: dict
    speed: dict
    then: list = field(default_factory=list)
    predictions: dict | None = None
    notes: list = field(default_factory=list)
    training: dict | None = None
    robustness: dict | None = None
    calibration: dict | None = None
    agreement: dict | None = None
    model: dict | None = None
    provenance: dict | None = None
    recipe: dict | None = None
    compress_memory: dict | None = None
    device: str | None = None
    calibration_texts: list | None = None
    command: str = ""
