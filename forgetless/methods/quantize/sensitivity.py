"""Which layers cause a quantized model's loss (``--sensitivity blocks | linear-types`` of ``rtn``, ``gptq``,
``awq``): the quantized model's units put one at a time into the base model, each one's KL divergence to
the base on calibration text and its share of the sum (the layer-wise sensitivity of Dong et al. 2019,
"HAWQ", measured directly as in Kurtic et al. 2025's per-layer ablations).

Units: each decoder block (``blocks``: the quantized block replaces the base's, with its folded norms
and quantized inputs, exact since SmoothQuant / AWQ fold scales within a block), or each kind of linear
layer named by its path inside the block (``linear-types``: q_proj, k_proj, …, down_proj of every block;
a linear whose input was divided by ``c`` and whose outputs by ``r`` when scales were folded
(``folding.fold`` records both) runs as ``r ⊙ L(x / c)``, the quantized layer in the base's basis).

For unit ``u`` the model ``M_u`` is the base with ``u`` quantized; on ``TEXTS`` calibration texts of at most
``TOKENS`` tokens, over the real tokens ``t``:

    KL_u = mean_t Σ_v p_base(v | t) · (log p_base(v | t) − log p_u(v | t))     (nats per token)
    flips_u = share of tokens whose most likely next token differs from the base's

``share_u = KL_u / Σ_w KL_w`` (the units' effects need not add up: the whole quantized model's KL is
reported beside them). ``mixed_ignore`` names the modules of the ``keep`` most sensitive units, an
``ignore:`` list in llm-compressor's spelling (module names) for a mixed-precision recipe.
"""
from __future__ import annotations

import copy
import types

import torch
from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.sites import is_linear

TEXTS, TOKENS, BATCH = 8, 128, 4
UNITS = ("none", "blocks", "linear-types")
FOLD_IN, FOLD_OUT = "input_fold", "output_fold"


class Unfolded(nn.Module):
    """A quantized linear in the base's basis: ``r ⊙ L(x / c)`` (``c``, ``r``: its folded scales)."""

    def __init__(self, linear: nn.Module):
        super().__init__()
        self.linear = linear
        self.c, self.r = getattr(linear, FOLD_IN, None), getattr(linear, FOLD_OUT, None)

    def forward(self, x):
        out = self.linear(x if self.c is None else x / self.c.to(x.dtype))
        return out if self.r is None else out * self.r.to(out.dtype)


def record_fold(modules: list[nn.Module], producer: nn.Module, scales: torch.Tensor) -> None:
    """After ``folding.fold``: the group's inputs are divided by ``scales``, a linear producer's outputs too."""
    for module in modules:
        setattr(module, FOLD_IN, getattr(module, FOLD_IN, 1.0) * scales.detach().float())
    if is_linear(producer):
        setattr(producer, FOLD_OUT, getattr(producer, FOLD_OUT, 1.0) * scales.detach().float())


def units(model: nn.Module, kind: str) -> dict[str, list[str]]:
    """``{unit label: [module names swapped]}``: blocks (``decoder.3``) or linear kinds (``mlp.down_proj``)."""
    found: dict[str, list[str]] = {}
    prefix = {id(m): n for n, m in model.named_modules()}
    for stack, layers in get_adapter(model).stacks(model).items():
        for index, layer in enumerate(layers):
            base = prefix[id(layer)]
            if kind == "blocks":
                found[f"{stack}.{index}"] = [base]
                continue
            for inner, module in layer.named_modules():
                if is_linear(module):
                    found.setdefault(inner, []).append(f"{base}.{inner}")
    return found


def _swap(model: nn.Module, name: str, module: nn.Module) -> nn.Module:
    parent, _, child = name.rpartition(".")
    owner = model.get_submodule(parent) if parent else model
    old = getattr(owner, child)
    setattr(owner, child, module)
    return old


def _log_probs(model: nn.Module, batches: list[dict]) -> list[torch.Tensor]:
    with torch.no_grad():
        return [torch.log_softmax(model(**b).logits.float(), dim=-1) for b in batches]


def _compare(base: list[torch.Tensor], other: list[torch.Tensor], batches: list[dict]) -> dict:
    kl = flips = tokens = 0.0
    for p, q, batch in zip(base, other, batches):
        mask = batch["attention_mask"].bool()
        kl += float(((p.exp() * (p - q)).sum(-1))[mask].sum())
        flips += float((p.argmax(-1) != q.argmax(-1))[mask].sum())
        tokens += float(mask.sum())
    return {"kl": kl / tokens, "flips": flips / tokens}


def measure(base: nn.Module, quantized: nn.Module, batches: list[dict], kind: str) -> dict:
    """The card's ``sensitivity`` section (module docstring) for the quantized model against its base."""
    if kind not in UNITS[1:]:
        raise ConfigError(f"--sensitivity {kind}: one of {', '.join(UNITS)}")
    reference = _log_probs(base, batches)
    work = copy.deepcopy(base).eval()
    rows = []
    for label, names in units(quantized, kind).items():
        originals = [_swap(work, n, quantized.get_submodule(n) if kind == "blocks" else
                           Unfolded(quantized.get_submodule(n))) for n in names]
        rows.append({"unit": label, "modules": names, **_compare(reference, _log_probs(work, batches), batches)})
        for name, original in zip(names, originals):
            _swap(work, name, original)
    total = sum(r["kl"] for r in rows) or 1.0
    for row in rows:
        row["kl_share"] = row["kl"] / total
    rows.sort(key=lambda r: -r["kl"])
    return {"units": kind, "ranking": rows, "whole_model": _compare(reference, _log_probs(quantized, batches), batches),
            "texts": sum(len(b["input_ids"]) for b in batches),
            "tokens": int(sum(int(b["attention_mask"].sum()) for b in batches))}


def mixed_ignore(section: dict, model: nn.Module, keep: int = 3) -> list[str]:
    """Module names (every linear) of the ``keep`` most sensitive units: ``ignore:`` of a mixed recipe."""
    names = [n for row in section["ranking"][:keep] for n in row["modules"]]
    linears = [n for n, m in model.named_modules() if is_linear(m)]
    return sorted(l for l in linears if any(l == n or l.startswith(n + ".") for n in names))


def check_sensitivity(config, ctx) -> None:
    """``--sensitivity`` needs the run's base model (``ctx.teacher``): one error before any work."""
    if getattr(config, "sensitivity", "none") != "none" and (ctx is None or getattr(ctx, "teacher", None) is None):
        raise ConfigError(f"--sensitivity {config.sensitivity}: compares each quantized unit with the base model, "
                          "which only a compress run holds (forgetless compress / run); forgetless.apply has none")


def sensitivity_section(method) -> dict:
    """``{"sensitivity": …}`` of a method's card section when it measured one."""
    section = getattr(method, "sensitivity", None)
    return {"sensitivity": section} if section else {}


def run_sensitivity(model: nn.Module, ctx, config) -> dict | None:
    """``measure`` for a quantizing method's ``config`` (its ``sensitivity`` option) after it quantized
    ``model``: the base is the run's (``ctx.teacher``), the texts its calibration texts; a note for the card."""
    from .._shared.calibration import calibration_batches

    if config.sensitivity == "none":
        return None
    check_sensitivity(config, ctx)
    texts = types.SimpleNamespace(name=config.name, calibration_examples=TEXTS, calibration_length=TOKENS,
                                  calibration_batch=BATCH)
    section = measure(ctx.teacher.eval(), model, calibration_batches(ctx, texts), config.sensitivity)
    section["mixed_ignore"] = mixed_ignore(section, model)
    top = ", ".join(f"{r['unit']} ({r['kl_share']:.0%})" for r in section["ranking"][:3])
    ctx.notes.append(f"{config.name} sensitivity ({config.sensitivity}, each unit quantized alone in the base, KL on "
                     f"{section['tokens']} calibration tokens): the most sensitive {top}; the whole model's KL "
                     f"{section['whole_model']['kl']:.3g} nats per token")
    return section
