"""One name for a run's chain of methods (``--method`` then each ``--then``), used wherever a run is
named: the title of ``report.md`` / ``report.html``, the model card's name, tags and options, the
speed stage's line (``metrics/speed.untimed_reason``) and ``forgetless compare``.

A method is named by its registered name and the option that says what it did: an N:M pattern
(``wanda 2:4``), a sparsity (``magnitude 40%``), fp8 weights (``rtn fp8``), bits (``gptq 4-bit``) or a
dtype (``quantize int8``); a chain joins them with `` + `` (``wanda 2:4 + gptq 4-bit``). A run of a
``--scheme`` is named by the scheme and the format its methods ran (``card_chain``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..quantization.format import QuantFormat
from .sections import method_sections

if TYPE_CHECKING:  # types only: comparison_text (which card_types' Comparison imports) reads headline, then this
    from .card_types import Card


def method_label(name: str, config: dict) -> str:
    """``wanda 2:4``, ``sparsegpt 50%``, ``gptq 4-bit``, ``quantize int8``, or the bare name."""
    if config.get("pattern") not in (None, "unstructured"):
        return f"{name} {config['pattern']}"
    if isinstance(config.get("sparsity"), float):
        return f"{name} {100 * config['sparsity']:g}%"
    if config.get("bits_budget"):
        return f"{name} {config['bits_budget']:g}-bit budget"
    fmt = QuantFormat.from_config(config)
    if fmt is not None:
        return f"{name} {fmt.name_word}"
    if isinstance(config.get("bits"), int):
        return f"{name} {config['bits']}-bit"
    if isinstance(config.get("dtype"), str):
        return f"{name} {config['dtype']}"
    return name


def chain_name(methods: list[dict]) -> str:
    """The labels of ``methods`` (each ``{"name", "config"}``, as ``describe()`` gives) joined by `` + ``."""
    return " + ".join(method_label(m["name"], m.get("config") or {}) for m in methods)


def format_label(config: dict) -> str | None:
    """A quantizing method's format in words (``fp8 weights per row, fp8 inputs per token``, ``int4 weights,
    groups of 128, asymmetric``); None for a config without one."""
    fmt = QuantFormat.from_config(config)
    if fmt is None:
        return None
    if config.get("bits_budget"):
        return f"formats of a {config['bits_budget']:g}-bit budget"
    return fmt.title


def card_chain(card: Card) -> str:
    """``chain_name`` of a report card's methods; a run of a ``--scheme`` (recorded in the card's ``run``)
    is named by it, with what its methods ran: ``FP8-DYNAMIC (rtn fp8 weights per row, fp8 inputs per token)``."""
    methods = card.method.chain()
    scheme = card.run.get("scheme")
    if not scheme:
        return " + ".join(method_label(m.name, m.config) for m in methods)
    ran = [f"{m.name} {format_label(m.config)}" if format_label(m.config) else method_label(m.name, m.config)
           for m in methods]
    return f"{scheme} ({' + '.join(ran)})"


def card_title(card: Card) -> str:
    """``sst2 · wanda 2:4 + gptq 4-bit``: the task and the method chain (the pages' title)."""
    return f"{card.task.name} · {card_chain(card)}"


def quantizes(card: Card) -> bool:
    """Whether a method of the card's chain leaves quantized weights."""
    return any(m.quantizes for m in card.method.chain())


def zeroes_weights(card: Card) -> bool:
    """Whether a method of the chain prunes by zeroing weights (neither removes them, ``structured``,
    nor quantizes them): only then are the zeros of the weights its sparsity."""
    return any(not m.structured and not m.quantizes for m in card.method.chain())


def quantized_layer_count(card: Card) -> int | None:
    """How many linear layers the run quantized, as the quantizing method ran them (its card section's
    ``layers``: an expert's projection counted once, as in its coverage note), the one count every page
    gives. A card without that section (an older one): the compressed-tensors modules of the weights file
    (``params.stored``; a Mixtral expert's ``gate_up_proj`` is stored there as two, ``w1`` and ``w3``)."""
    section = method_sections(card).quantization
    if section is not None and section.layers is not None:
        return section.layers
    return ((card.params.stored or {}).get("quantized") or {}).get("layers")
