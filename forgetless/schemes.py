"""The quantization schemes LLM users deploy, by name (``--scheme``, recipe key ``scheme``): each one is
the methods and options that produce what llm-compressor's preset of that name describes
(compressed-tensors 0.19 / 0.20 ``quantization/quant_scheme.py``, ``PRESET_SCHEMES``; the formats checked
against llm-compressor 0.14's output in ``tests/fixtures/llmcompressor_schemes.json``):

=========== ==================================================== ============================================
scheme       llm-compressor                                       forgetless
=========== ==================================================== ============================================
W4A16        ``W4A16``: int4 weights, groups of 128, symmetric     gptq, bits 4, group 128
W4A16-AWQ    ``AWQModifier`` + ``W4A16_ASYM`` (zero points)        awq, bits 4, group 128, asymmetric
W8A8-INT8    ``SmoothQuantModifier(0.8)`` + ``W8A8``: int8         smoothquant α 0.8, then gptq bits 8, one scale
             weights per output row, int8 inputs per token         per row, activations int8-token
FP8-DYNAMIC  ``FP8_DYNAMIC``: fp8 weights per row, fp8 inputs      rtn, fp8 weights per row, fp8-token
             per token (dynamic), no calibration
FP8          ``FP8``: fp8 weights per tensor, fp8 inputs per       gptq, fp8 weights per tensor, fp8-tensor
             tensor, static scale from calibration
W8A16        ``W8A16``: int8 weights, groups of 128, symmetric     gptq, bits 8, group 128
=========== ==================================================== ============================================

GPTQ where llm-compressor's examples use ``GPTQModifier`` (W4A16, W8A8) and for the calibrated FP8 (the
static input scales need calibration, which ``rtn`` does not run); ``FP8-DYNAMIC`` rounds to nearest, as
its example (``QuantizationModifier``, no data). The group of 128 does not divide every width
(SmolLM2's 576 inputs): add ``--group-size 64`` (an error says so before any work).

``with_scheme`` puts a scheme's keys under the ones given (``--scheme W4A16 --group-size 64``: the
user's group size wins; a recipe's ``then: [{name: gptq, calibration_examples: 32}]`` adds options to the
scheme's then-method); a different ``--method`` or ``--then`` beside ``--scheme`` is an error.
Standard library only.
"""
from __future__ import annotations

from .errors import ConfigError

SCHEMES: dict[str, dict] = {
    "W4A16": {"method": "gptq", "method.bits": 4, "method.group_size": 128},
    "W4A16-AWQ": {"method": "awq", "method.bits": 4, "method.group_size": 128, "method.asymmetric": True},
    "W8A8-INT8": {"method": "smoothquant", "method.alpha": 0.8,
                  "then": [{"name": "gptq", "bits": 8, "group_size": -1, "activations": "int8-token"}]},
    "FP8-DYNAMIC": {"method": "rtn", "method.bits": 8, "method.group_size": -1, "method.weight_type": "fp8",
                    "method.activations": "fp8-token"},
    "FP8": {"method": "gptq", "method.bits": 8, "method.group_size": 0, "method.weight_type": "fp8",
            "method.activations": "fp8-tensor"},
    "W8A16": {"method": "gptq", "method.bits": 8, "method.group_size": 128},
}
SCHEME_HELP = ("a deployable quantization scheme, named as llm-compressor's preset it produces: W4A16 (gptq int4, "
               "groups of 128) | W4A16-AWQ (awq int4, groups of 128, asymmetric) | W8A8-INT8 (smoothquant α 0.8, "
               "then gptq int8 weights per row and int8 inputs per token) | FP8-DYNAMIC (rtn fp8 weights per row, "
               "fp8 inputs per token) | FP8 (gptq fp8 weights and inputs per tensor, static) | W8A16 (gptq int8, "
               "groups of 128); sets --method (and --then); method options given beside it win (e.g. --group-size "
               "64 for 576-wide layers)")


def _names(value) -> list[str]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [str(item.get("name") if isinstance(item, dict) else getattr(item, "name", item)).split(":")[0]
            for item in items]


def with_scheme(flat: dict, source: str) -> dict:
    """``flat`` (flat / dotted recipe keys) with the keys of its ``scheme`` under the ones it gives."""
    name = flat.get("scheme")
    if name is None:
        return flat
    if name not in SCHEMES:
        raise ConfigError(f"{'--scheme' if source == 'the command line' else source + ': key scheme'} {name}: not one "
                          f"of {', '.join(SCHEMES)}")
    preset = SCHEMES[name]
    for key in ("method", "then"):
        given = flat.get(key)
        if given is not None and given != [] and _names(given) != _names(preset.get(key, [])):
            runs = " then ".join(_names(preset["method"]) + _names(preset.get("then", [])))
            raise ConfigError(f"--scheme {name} runs {runs}; --{key} {', '.join(_names(given))} names other methods: "
                              "give --scheme alone, or name the methods (--method, --then) without it")
    merged = {**preset, **flat}
    if isinstance(flat.get("then"), list) and "then" in preset:  # the scheme's then-methods, their options given
        merged["then"] = [{**base, **item} if isinstance(item, dict) else item
                          for base, item in zip(preset["then"], flat["then"])]
    return merged
