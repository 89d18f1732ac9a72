"""Which linear layers a one-shot method compresses: ``targets`` and ``ignore`` spelled as
llm-compressor and compressed-tensors spell them. A pattern is a module class name (``Linear``:
``nn.Linear`` and every subclass, e.g. Falcon's ``FalconLinear``, and transformers' ``Conv1D``,
GPT-2's), ``re:`` and a regular expression matched from the start of the module's name
(``re:.*self_attn\\..*``), or a module name itself. A linear is compressed when a target matches it
and no ignore pattern does. Only linears inside the decoder blocks are candidates (the language-model
head and the embeddings never are), fused layers (Falcon's ``query_key_value``, Phi-3's
``qkv_proj``) as the one linear they are, and the experts of a mixture-of-experts block as one linear
per expert and projection (``experts.linearized``: ``mlp.experts.3.gate_up_proj``).

The options themselves (``targets``, ``ignore``, their syntax check) are declared once, in
``methods/_shared/oneshot_config.TargetsConfig``. ``select_linears`` checks the patterns against the
model before any work: a pattern matching no
candidate, or patterns leaving none, is an ``OptionError`` naming it; experts that cannot be run one
by one are an ``UnsupportedModelError`` unless ``ignore`` names them (never skipped silently).
``coverage`` is what the card says: the compressed linears as a share of all parameters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from torch import nn

from ..errors import OptionError, UnsupportedModelError
from .adapters import get_adapter
from .experts import ExpertLinear, unsupported_experts
from .sites import is_conv1d, is_linear

def matches(pattern: str, name: str, module: nn.Module) -> bool:
    """Whether ``pattern`` (module docstring) matches the module ``name``."""
    if pattern.startswith("re:"):
        return re.match(pattern[3:], name) is not None
    if pattern == name:
        return True
    classes = {cls.__name__ for cls in type(module).__mro__ if issubclass(cls, nn.Module)}
    return pattern in classes or (pattern == "Linear" and is_conv1d(module))


@dataclass(frozen=True)
class Selection:
    """The linears ``targets`` / ``ignore`` choose, as a predicate on (name, module); ``left``: module names a
    bit budget keeps in float (``methods/_shared/budget.py``), out of the selection but not of ``ignore``."""

    targets: tuple[str, ...]
    ignore: tuple[str, ...]
    left: frozenset[str] = frozenset()

    @classmethod
    def of(cls, config, left: frozenset[str] = frozenset()) -> "Selection":
        """The selection of a method config with ``targets`` / ``ignore`` (``TargetsConfig``)."""
        return cls(tuple(config.targets), tuple(config.ignore), left)

    def __call__(self, name: str, module: nn.Module) -> bool:
        return (is_linear(module) and name not in self.left and any(matches(p, name, module) for p in self.targets)
                and not any(matches(p, name, module) for p in self.ignore))


def candidates(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(name, linear)`` of every linear inside the model's layer stacks, named as in the model."""
    names = {id(module): name for name, module in model.named_modules()}
    return [(names[id(module)], module) for layers in get_adapter(model).stacks(model).values()
            for module in layers.modules() if is_linear(module) and id(module) in names]


def select_linears(model: nn.Module, selection: Selection) -> list[tuple[str, nn.Module]]:
    """The linears ``selection`` chooses (call inside ``experts.linearized`` to see the experts); the
    checks of the module docstring first."""
    found = candidates(model)
    fused = [(f"{_name_of(model, layers)}.{name}", module) for layers in get_adapter(model).stacks(model).values()
             for name, module in unsupported_experts(layers)]
    for flag, patterns in (("--targets", selection.targets), ("--ignore", selection.ignore)):
        for pattern in patterns:
            known = found + fused if flag == "--ignore" else found  # ignore may name experts modules too
            if not any(matches(pattern, name, module) for name, module in known):
                raise OptionError(f"{flag} {pattern}: matches no linear layer inside the decoder blocks (e.g. "
                                  f"{', '.join(name for name, _ in found[:2])}; the head and embeddings are never "
                                  "compressed)")
    for name, module in fused:
        if not any(matches(p, name, module) for p in selection.ignore):
            raise UnsupportedModelError(
                f"{name} ({type(module).__name__}) keeps its experts in fused 3-D weights forgetless cannot run one "
                f"by one; add it to --ignore to leave them uncompressed")
    chosen = [(name, module) for name, module in found if selection(name, module)]
    if not chosen:
        raise OptionError(f"--targets {','.join(selection.targets)} --ignore {','.join(selection.ignore) or '(none)'}: "
                          "leave no linear layer to compress")
    return chosen


def _name_of(model: nn.Module, module: nn.Module) -> str:
    return next(name for name, m in model.named_modules() if m is module)


def coverage(model: nn.Module, chosen: list[tuple[str, nn.Module]], selection: Selection) -> dict:
    """The card's account: the patterns, how many linears were compressed and their weights as a
    share of all the model's parameters (the experts' linears counted once, as the fused weights)."""
    unique = {id(p): p for module in model.modules() if not isinstance(module, ExpertLinear)
              for p in module.parameters(recurse=False)}  # tied weights (head = embeddings) once
    total = sum(p.numel() for p in unique.values())
    weights = sum(module.weight.numel() for _, module in chosen)
    return {"targets": list(selection.targets), "ignore": list(selection.ignore), "modules": len(chosen),
            "experts": sum(isinstance(module, ExpertLinear) for _, module in chosen),
            "weights": weights, "parameters": total, "share": weights / total if total else 0.0}
