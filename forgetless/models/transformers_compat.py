"""The transformers versions forgetless is tested with, and the one public API it relies on that
changed inside that range.

transformers 5.24 renamed the KV cache argument of every model, attention and mask function from
``past_key_values`` to ``cache`` (``utils.deprecation.deprecate_kwarg("past_key_values", "5.40.0",
new_name="cache")``): a model's ``forward`` still accepts the old name until 5.40, but an attention
module is now *called* with ``cache=`` only, so a module that read ``kwargs["past_key_values"]``
silently saw no cache. Outputs carry ``.cache`` (``.past_key_values`` is a deprecated alias).
"""
from __future__ import annotations

import sys

import transformers
from packaging.version import Version

# Keep in step with pyproject.toml's pin and the README: every minor release here ran the suite.
TESTED_TRANSFORMERS = ("5.23", "5.24")

CACHE_ARG = "cache" if Version(transformers.__version__).release[:2] >= (5, 24) else "past_key_values"


def cache_from_kwargs(kwargs: dict):
    """The KV cache an attention module was called with (``cache=`` from 5.24, ``past_key_values=`` before)."""
    return kwargs.get(CACHE_ARG)


def output_cache(output):
    """The KV cache a model returned (``output.cache`` from 5.24, ``output.past_key_values`` before)."""
    return getattr(output, CACHE_ARG)


def untested_transformers(version: str = transformers.__version__) -> str | None:
    """A one-line message when ``version`` is not a minor release forgetless was tested with, else None."""
    minor = ".".join(str(part) for part in Version(version).release[:2])
    if minor in TESTED_TRANSFORMERS:
        return None
    return (f"transformers {version} is not a version forgetless is tested with "
            f"({', '.join(TESTED_TRANSFORMERS)}); install one: pip install 'transformers>={TESTED_TRANSFORMERS[0]},"
            f"<{_next_minor(TESTED_TRANSFORMERS[-1])}'")


def _next_minor(minor: str) -> str:
    major, rest = minor.split(".")
    return f"{major}.{int(rest) + 1}"


def keeps_logits_by_mask(model) -> bool:
    """Whether ``model(logits_to_keep=mask)`` takes a boolean (batch, positions) mask and returns the logits
    of its True positions only, flattened: models whose module slices through transformers'
    ``slice_logits_to_keep`` (5.24: every causal LM forgetless scores)."""
    return hasattr(sys.modules.get(type(model).__module__), "slice_logits_to_keep")
