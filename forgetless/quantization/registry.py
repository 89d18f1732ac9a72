"""The weights' codes by ``--weight-type`` name: one line per format, the codes' class as ``module:Class``
(imported when a question needs it; this file and the option's choices stay free of torch). Adding a
format is its own file in this folder plus its line here (docs: "Adding a quantization format")."""
from __future__ import annotations

import importlib

CODES = {
    "int": "ints:GroupedInts",
    "fp8": "fp8:FloatCodes",
}


def codes_class(weight_type: str):
    """The codes' class of ``weight_type`` (a key of ``CODES``)."""
    module, name = CODES[weight_type].split(":")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def all_codes() -> list:
    """Every registered codes' class, in ``CODES`` order (the reader asks each which config groups it reads)."""
    return [codes_class(name) for name in CODES]
