"""The quantization schemes LLM users deploy, by name (``--scheme``, recipe key ``scheme``): each one is a
format object (``quantization.format.QuantFormat``) and the algorithm that produces it (``Scheme``), what
llm-compressor's preset of that name describes
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

``with_scheme`` puts a scheme's keys under the ones given. An option given beside a scheme reaches every
method of the scheme that has it (``--scheme W8A8-INT8 --ignore 're:.*down_proj'``: smoothquant and the
int8 quantizer both leave down_proj alone; ``--calibration-examples 32``: both read 32 texts), and it may
*refine* the scheme (``--scheme W4A16 --group-size 64``: the user's group size wins; a recipe's ``then:
[{name: gptq, calibration_examples: 32}]`` adds options to the scheme's then-method). An option that
*contradicts* what the scheme's name says (``DEFINING``: bits, weight type, inputs, symmetry — ``--scheme
W4A16 --bits 8``) is an error naming both, as is a different ``--method`` or ``--then`` beside ``--scheme``,
and an option no method of the scheme has. ``--recovery none`` asks for nothing and passes (``tree``'s rule
for methods without a recovery step).
"""
from __future__ import annotations

import dataclasses
import difflib

from dataclasses import dataclass

from .errors import ConfigError
from .options import coerce
from .quantization.format import QuantFormat
from .registry import METHODS


@dataclass(frozen=True)
class Scheme:
    """A deployable scheme: the ``format`` its quantizing method (``algorithm``) writes, and the methods run
    before it (``before``: ``(name, options)``, e.g. SmoothQuant's α)."""

    format: QuantFormat
    algorithm: str
    before: tuple[tuple[str, dict], ...] = ()

    def chain(self) -> list[tuple[str, dict]]:
        """The methods the scheme runs, in order, each with the options its preset gives."""
        return [*((name, dict(options)) for name, options in self.before), (self.algorithm, format_options(self.format))]

    def preset(self) -> dict:
        """The scheme as flat recipe keys (``method``, ``method.<option>``, ``then``), as a recipe spells it."""
        (first, options), *rest = self.chain()
        return {"method": first, **{f"method.{key}": value for key, value in options.items()},
                **({"then": [{"name": name, **options} for name, options in rest]} if rest else {})}


def format_options(fmt: QuantFormat) -> dict:
    """The method options that give ``fmt`` (``quantization.options.WeightFormat``): bits and group size, and the
    weight type, inputs and asymmetry where they are not the defaults."""
    return {"bits": fmt.bits, "group_size": fmt.group_size, **({"weight_type": fmt.type} if fmt.type != "int" else {}),
            **({"activations": fmt.activations} if fmt.activations != "none" else {}),
            **({"asymmetric": True} if not fmt.symmetric else {})}


SCHEMES: dict[str, Scheme] = {
    "W4A16": Scheme(QuantFormat(4, "int", 128), "gptq"),
    "W4A16-AWQ": Scheme(QuantFormat(4, "int", 128, symmetric=False), "awq"),
    "W8A8-INT8": Scheme(QuantFormat(8, "int", -1, activations="int8-token"), "gptq",
                        before=(("smoothquant", {"alpha": 0.8}),)),
    "FP8-DYNAMIC": Scheme(QuantFormat(8, "fp8", -1, activations="fp8-token"), "rtn"),
    "FP8": Scheme(QuantFormat(8, "fp8", 0, activations="fp8-tensor"), "gptq"),
    "W8A16": Scheme(QuantFormat(8, "int", 128), "gptq"),
}
SCHEME_HELP = ("a deployable quantization scheme, named as llm-compressor's preset it produces: W4A16 (gptq int4, "
               "groups of 128) | W4A16-AWQ (awq int4, groups of 128, asymmetric) | W8A8-INT8 (smoothquant α 0.8, "
               "then gptq int8 weights per row and int8 inputs per token) | FP8-DYNAMIC (rtn fp8 weights per row, "
               "fp8 inputs per token) | FP8 (gptq fp8 weights and inputs per tensor, static) | W8A16 (gptq int8, "
               "groups of 128); sets --method (and --then); a method option given beside it reaches every method "
               "of the scheme that has it and refines it (e.g. --group-size 64 for 576-wide layers, --ignore); one "
               "that contradicts the scheme's name (--bits, --weight-type, --activations, --asymmetric) is an error")


COMMAND_LINE = "the command line"  # the source of flags (``tree.build``'s default)
DEFINING = ("bits", "weight_type", "activations", "asymmetric")  # what a scheme's name says (W4A16: 4-bit int
# weights, 16-bit inputs, symmetric); the other options (group size, α, calibration, targets) refine it


def _names(value) -> list[str]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [str(item.get("name") if isinstance(item, dict) else getattr(item, "name", item)).split(":")[0]
            for item in items]


def scheme_chain(name: str) -> list[tuple[str, dict]]:
    """The methods the scheme ``name`` runs, in order, each with the options its preset gives."""
    return SCHEMES[name].chain()


def scheme_methods(name) -> list:
    """The method configs of the scheme ``name``, in order (``forgetless.apply(model, "W4A16")``,
    ``forgetless.compress(..., scheme="W4A16")``)."""
    check_scheme_name(name, "--scheme")
    return [METHODS.make_config(method, options) for method, options in scheme_chain(name)]


def check_scheme_name(name, typed: str) -> None:
    """``name`` is a scheme (``typed``: the option as the user typed it); else one error with the closest
    (``fp8-dynamic`` → FP8-DYNAMIC, the spelling of llm-compressor's presets)."""
    if name in SCHEMES:
        return
    close = [s for s in SCHEMES if s.lower() == str(name).lower()] or \
        difflib.get_close_matches(str(name).upper(), list(SCHEMES), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    raise ConfigError(f"{typed} {name}: not one of {', '.join(SCHEMES)}{hint}")


def with_scheme(flat: dict, source: str, options: dict[str, str]) -> dict:
    """``flat`` (flat / dotted recipe keys) with the keys of its ``scheme`` under the ones it gives;
    ``options``: the keys of ``flat`` that are method options, each with its field name (``ignore`` →
    ``ignore``, ``method.bits`` → ``bits``). Each goes to every method of the scheme that has it."""
    name = flat.get("scheme")
    if name is None:
        return flat
    chain = _chain_named(flat, name, source)
    merged = {**SCHEMES[name].preset(), **{key: value for key, value in flat.items() if key not in options}}
    then = [dict(preset) for _, preset in chain[1:]]
    for key, field in options.items():
        where, value = typed_key(key, source, bare=True), flat[key]
        shown = where if value is True and source == COMMAND_LINE else f"{where} {value}"  # a switch: --asymmetric
        owners = _owners(name, chain, field, key, source)
        for i in owners:
            _check_refines(name, chain[i], field, value, (where, shown), source)
            if i:
                then[i - 1][field] = value
        if not owners or 0 in owners:
            merged[key] = value
    given = list(flat["then"]) if isinstance(flat.get("then"), list) else []
    for link, item in zip(chain[1:], given):  # a recipe's or --then's options for the scheme's then-methods
        for field, value in (item.items() if isinstance(item, dict) else ()):
            where = f"{typed_key('then', source, bare=True)} {link[0]}:{field}"
            _check_refines(name, link, field, value, (where, f"{where}={value}"), source)
    if then:
        given += [{}] * (len(then) - len(given))
        merged["then"] = [{"name": method, **base, **item} if isinstance(item, dict) else item
                          for (method, _), base, item in zip(chain[1:], then, given)]
    return merged


def _chain_named(flat: dict, name: str, source: str) -> list[tuple[str, dict]]:
    """The scheme's methods (``scheme_chain``), after checking the name and any ``method`` / ``then`` given
    beside it (the same methods, or an error)."""
    check_scheme_name(name, typed_key("scheme", source))
    chain = scheme_chain(name)
    runs = " then ".join(method for method, _ in chain)
    for key in ("method", "then"):
        given = flat.get(key)
        if given is not None and given != [] and _names(given) != _names(SCHEMES[name].preset().get(key, [])):
            raise ConfigError(f"--scheme {name} runs {runs}; --{key} {', '.join(_names(given))} names other methods: "
                              "give --scheme alone, or name the methods (--method, --then) without it")
    return chain


def _owners(scheme: str, chain: list[tuple[str, dict]], field: str, key: str, source: str) -> list[int]:
    """Which methods of ``chain`` have the option ``field`` (given as ``key``); none is an error (but
    ``recovery``: none of them trains, and ``tree``'s rule takes ``none`` and refuses the rest)."""
    owners = [i for i, (method, _) in enumerate(chain) if field in METHODS.option_names(method)]
    if not owners and field != "recovery":
        runs = " then ".join(method for method, _ in chain)
        others = ", ".join(n for n in METHODS.names() if field in METHODS.option_names(n))
        raise ConfigError(f"{typed_key(key, source)} does not apply to --scheme {scheme} (it runs {runs}; "
                          f"{typed_key(key, source, bare=True)} is an option of {others})")
    return owners


def _check_refines(scheme: str, link: tuple[str, dict], field: str, value, typed: tuple[str, str],
                   source: str) -> None:
    """A value the user gave for ``field`` of a method of ``scheme`` (``link``: the method, its preset
    options; ``typed``: the option as the user typed it, without and with its value) does not contradict
    what the scheme's name says (``DEFINING``): one error naming both."""
    if field not in DEFINING:
        return
    (method, preset), (where, shown) = link, typed
    cls = METHODS.config_class(method)
    wanted = preset.get(field, next(f.default for f in dataclasses.fields(cls) if f.name == field))
    got = coerce(cls, field, value, where)
    if got == wanted:
        return
    fits = [other for other in SCHEMES if other != scheme and _defines(other) == {**_defines(scheme), field: got}]
    instead = f"--scheme {fits[0]} means {field} {_said(got)}; or " if fits else ""
    first, *rest = [name for name, _ in scheme_chain(scheme)]
    methods = f"--method {first}" + "".join(f" --then {name}" for name in rest)
    raise ConfigError(f"{typed_key('scheme', source)} {scheme} {shown}: "
                      f"{scheme} means {field} {_said(wanted)}; {instead}give {methods} with your options, without "
                      "--scheme")


def _defines(scheme: str) -> dict:
    """What the name of ``scheme`` says: the ``DEFINING`` options of its last (quantizing) method."""
    method, preset = scheme_chain(scheme)[-1]
    defaults = {f.name: f.default for f in dataclasses.fields(METHODS.config_class(method)) if f.name in DEFINING}
    return {**defaults, **{k: v for k, v in preset.items() if k in DEFINING}}


def _said(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def typed_key(key: str, source: str, bare: bool = False) -> str:
    """``key`` as the user typed it: a flag (``--bits``, ``method.bits``) or a recipe's key (prefixed by
    the recipe unless ``bare``)."""
    if source == COMMAND_LINE:
        return key if "." in key else "--" + key.replace("_", "-")
    return f"key {key!r}" if bare else f"{source}: key {key!r}"
