"""Which layers cause a quantized model's loss (``--sensitivity blocks | linear-types`` of ``rtn``, ``gptq``,
``awq``): the quantized model's units put one at a time into the base model, each one's KL divergence to
the base on calibration text and its share of the sum (the layer-wise sensitivity of Dong et al. 2019,
"HAWQ", measured directly as in Kurtic et al. 2025's per-layer ablations).

Units: each block of the model's stacks (``blocks``: the quantized block replaces the base's, with its
folded norms and quantized inputs, exact since SmoothQuant / AWQ fold scales within a block), or each kind
of linear layer named by its path inside the block (``linear-types``: q_proj, k_proj, …, down_proj of every
block), or each linear layer alone (``linears``). A linear whose input was divided by ``c`` and whose outputs
by ``r`` when scales were folded (``folding.fold`` records both) runs as ``r ⊙ L(x / c)``, the quantized
layer in the base's basis. The experts of a mixture-of-experts block are linear kinds too: each fused 3-D
expert parameter (``mlp.experts.gate_up_proj``, ``mlp.experts.down_proj``: every expert's projection,
``models/experts.py``) is swapped whole, as the quantized model runs it.

For unit ``u`` the model ``M_u`` is the base with ``u`` quantized; on ``TEXTS`` calibration texts of at most
``TOKENS`` tokens, over the real tokens ``t``:

    KL_u = mean_t Σ_v p_base(v | t) · (log p_base(v | t) − log p_u(v | t))     (nats per token)
    flips_u = share of tokens whose most likely next token differs from the base's

(a classifier: over the texts ``t``, the class probabilities, the predicted class).
``share_u = KL_u / Σ_w KL_w`` (the units' effects need not add up: the whole quantized model's KL is
reported beside them). The ranking is by KL rounded to ``DIGITS`` significant digits, ties in the model's
order, so the same texts (the run's seed) give the same order whatever the float summation did.

The mixed-precision advice (``mixed_advice``) keeps the most sensitive units unquantized, at most ``KEEP``
and always a strict minority of the units, only units whose KL is above 0: a 2-block model gets none
(keeping one block of two is no mixed precision). It is an ``--ignore`` option forgetless accepts for the
same run (the run's own ``ignore`` patterns and one ``re:`` pattern per kept unit), and ``mixed_ignore``
the module names it leaves unquantized (an ``ignore:`` list in llm-compressor's spelling).
"""
from __future__ import annotations

import contextlib
import copy
import re
import time
import types

import torch
from torch import nn

from ...errors import ConfigError
from ...models.adapters import get_adapter
from ...models.experts import first_projection, is_fused_experts
from ...models.sites import is_linear

TEXTS, TOKENS, BATCH = 8, 128, 4
KEEP, DIGITS = 3, 4  # units the mixed-precision advice keeps at most; significant digits of the ranking's KL
UNITS = ("none", "blocks", "linear-types", "linears")
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
    """``{unit label: [names swapped]}``: blocks (``decoder.3``), linear kinds (``mlp.down_proj``; a fused
    experts parameter ``mlp.experts.down_proj``, named as the model's parameter) or single linears (``linears``:
    ``model.layers.3.mlp.down_proj``; a fused experts parameter whole)."""
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
                    label = inner if kind == "linear-types" else f"{base}.{inner}"
                    found.setdefault(label, []).append(f"{base}.{inner}")
                elif is_fused_experts(module):
                    for parameter in (first_projection(module), "down_proj"):
                        label = f"{inner}.{parameter}" if kind == "linear-types" else f"{base}.{inner}.{parameter}"
                        found.setdefault(label, []).append(f"{base}.{inner}.{parameter}")
    return found


def _swap(model: nn.Module, name: str, module: nn.Module) -> nn.Module:
    parent, _, child = name.rpartition(".")
    owner = model.get_submodule(parent) if parent else model
    old = getattr(owner, child)
    setattr(owner, child, module)
    return old


def _positions(log_probs: torch.Tensor, batch: dict) -> torch.Tensor:
    """The predictions compared: a causal LM's real tokens (batch × tokens × vocabulary), a classifier's
    texts (batch × classes)."""
    if log_probs.dim() == 2:
        return torch.ones(len(log_probs), dtype=torch.bool)
    return batch["attention_mask"].bool()


def _expected(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``Σ_v probs_v · values_v`` at each position, as a batched matrix product (no vocabulary-sized product)."""
    return (probs.unsqueeze(-2) @ values.unsqueeze(-1)).squeeze(-1).squeeze(-1)


class Reference:
    """The base model's predictions on the calibration batches, computed once per pass: for each batch its
    log-probabilities and probabilities, its most likely next tokens and the positions compared; with
    ``blocks``, also what each block of each stack returned, in call order (``replaying``)."""

    def __init__(self, base: nn.Module, batches: list[dict], blocks: bool = False):
        stacks = get_adapter(base).stacks(base).items() if blocks else ()
        layers = {(stack, index): layer for stack, found in stacks for index, layer in enumerate(found)}
        self.batches, self.rows = batches, []
        self.tokens = int(sum(int(b["attention_mask"].sum()) for b in batches))  # the calibration tokens read
        for batch in batches:
            outputs: dict = {key: [] for key in layers}
            hooks = [layer.register_forward_hook(lambda _m, _a, out, key=key: outputs[key].append(_cloned(out)))
                     for key, layer in layers.items()]
            try:
                with torch.no_grad():
                    log_p = torch.log_softmax(base(**batch).logits.float(), dim=-1)
            finally:
                for hook in hooks:
                    hook.remove()
            probs = log_p.exp()
            self.rows.append({"log_p": log_p, "probs": probs, "top": log_p.argmax(-1),
                              "mask": _positions(log_p, batch), "blocks": outputs})

    def compare(self, model: nn.Module, replayed: list[tuple[tuple[str, int], nn.Module]] = ()) -> dict:
        """``model``'s KL to the base and share of flipped predictions over the compared positions; the blocks
        ``replayed`` (``((stack, index), block of model)``) return the base's outputs instead of running."""
        kl = flips = tokens = 0.0
        for batch, row in zip(self.batches, self.rows):
            with replaying([(block, row["blocks"][key]) for key, block in replayed]), torch.no_grad():
                log_q = torch.log_softmax(model(**batch).logits.float(), dim=-1)
            mask = row["mask"]
            kl += float(_expected(row["probs"], row["log_p"] - log_q)[mask].sum())  # an unchanged unit: exactly 0
            flips += float((row["top"] != log_q.argmax(-1))[mask].sum())
            tokens += float(mask.sum())
        return {"kl": kl / tokens, "flips": flips / tokens}


def _cloned(value):
    """A block's output with its tensors copied (the next block may change its input in place); other values
    (a cache, None) as they are."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (tuple, list)):
        return type(value)(_cloned(v) for v in value)
    return value


@contextlib.contextmanager
def replaying(blocks: list[tuple[nn.Module, list]]):
    """Inside: each block returns its recorded outputs, one per call in order, without computing them. Exact
    for the blocks of a stack before the one unit that differs from the base: their inputs are the base's."""
    own = [(block, block.__dict__.get("forward")) for block, _ in blocks]  # a wrapper already set (accelerate's)
    for block, outputs in blocks:
        block.forward = lambda *_args, _outputs=iter(outputs), **_kwargs: _cloned(next(_outputs))
    try:
        yield
    finally:
        for block, previous in own:
            if previous is None:
                del block.forward
            else:
                block.forward = previous


def _quantized_part(quantized: nn.Module, name: str, kind: str):
    """What replaces the base's ``name``: the quantized block, a quantized linear in the base's basis
    (``Unfolded``), or a fused experts parameter as it is."""
    parent, _, child = name.rpartition(".")
    part = getattr(quantized.get_submodule(parent) if parent else quantized, child)
    return part if kind == "blocks" or isinstance(part, nn.Parameter) else Unfolded(part)


def unit_rows(reference: Reference, base: nn.Module, quantized: nn.Module, kind: str) -> list[dict]:
    """Each unit of ``quantized`` put alone into a copy of ``base``: its KL and flips against ``reference``, in
    the model's order. A block unit's forward replays the base's outputs of the blocks before it in its stack
    (``Reference(blocks=True)``): they see the base's inputs, so only the unit and what follows it run."""
    work = copy.deepcopy(base).eval()
    stacks = get_adapter(work).stacks(work).items()
    before = {f"{stack}.{index}": [((stack, j), layers[j]) for j in range(index)]
              for stack, layers in stacks for index in range(len(layers))} if kind == "blocks" else {}
    rows = []
    for label, names in units(quantized, kind).items():
        originals = [_swap(work, n, _quantized_part(quantized, n, kind)) for n in names]
        rows.append({"unit": label, "modules": names, **reference.compare(work, before.get(label, []))})
        for name, original in zip(names, originals):
            _swap(work, name, original)
    return rows


def measure(base: nn.Module, quantized: nn.Module, batches: list[dict], kind: str) -> dict:
    """The card's ``sensitivity`` section (module docstring) for the quantized model against its base."""
    if kind not in UNITS[1:]:
        raise ConfigError(f"--sensitivity {kind}: one of {', '.join(UNITS)}")
    start = time.perf_counter()
    reference = Reference(base, batches, blocks=kind == "blocks")
    rows = unit_rows(reference, base, quantized, kind)
    total = sum(r["kl"] for r in rows) or 1.0
    for row in rows:
        row["kl_share"] = row["kl"] / total
    order = {row["unit"]: i for i, row in enumerate(rows)}  # the model's order breaks ties
    rows.sort(key=lambda r: (-float(f"{r['kl']:.{DIGITS}g}"), order[r["unit"]]))
    per = "text" if reference.rows and reference.rows[0]["probs"].dim() == 2 else "token"
    return {"units": kind, "ranking": rows, "whole_model": reference.compare(quantized),
            "per": per, "texts": sum(len(b["input_ids"]) for b in batches),
            "tokens": reference.tokens, "seconds": round(time.perf_counter() - start, 2)}


def _pattern(row: dict, section: dict, model: nn.Module) -> str:
    """A ``--ignore`` pattern for one unit: its block's module path, or its kind of linear in every block
    (a fused experts parameter: each expert's linear, ``mlp.experts.3.down_proj``, as ``--ignore`` names it)."""
    if section["units"] == "blocks":
        return "re:" + re.escape(row["modules"][0] + ".")
    if section["units"] == "linears":
        parent, _, parameter = row["modules"][0].rpartition(".")
        if isinstance(getattr(model.get_submodule(parent), parameter, None), nn.Parameter):
            return "re:" + re.escape(parent) + r"\.\d+\." + re.escape(parameter) + "$"
        return row["modules"][0]
    inner = re.escape(row["unit"])
    parent, _, parameter = row["modules"][0].rpartition(".")
    if isinstance(getattr(model.get_submodule(parent), parameter, None), nn.Parameter):
        inner = re.escape(row["unit"].rpartition(".")[0]) + r"\.\d+\." + re.escape(parameter)
    return f"re:.*\\.{inner}$"


def _expert_linears(model: nn.Module, name: str) -> list[str]:
    """The per-expert linear names of a fused experts parameter ``name`` (others: ``[name]``)."""
    parent, _, parameter = name.rpartition(".")
    owner = model.get_submodule(parent) if parent else model
    if not isinstance(getattr(owner, parameter, None), nn.Parameter):
        return [name]
    return [f"{parent}.{e}.{parameter}" for e in range(getattr(owner, parameter).shape[0])]


def _ignorable(model: nn.Module) -> list[str]:
    """Every linear of ``model`` and every expert's linear of its fused experts, named as ``--ignore`` sees them."""
    names = []
    for name, module in model.named_modules():
        if is_linear(module):
            names.append(name)
        elif is_fused_experts(module):
            names += [n for p in (first_projection(module), "down_proj") for n in _expert_linears(model, f"{name}.{p}")]
    return names


def mixed_ignore(section: dict, model: nn.Module, keep: int = KEEP) -> list[str]:
    """Module names (every linear; every expert's) of the ``keep`` most sensitive units: ``ignore:`` of a
    mixed recipe."""
    names = [e for row in section["ranking"][:keep] for n in row["modules"] for e in _expert_linears(model, n)]
    return sorted(l for l in _ignorable(model) if any(l == n or l.startswith(n + ".") for n in names))


def mixed_advice(section: dict, model: nn.Module, ignore: list[str]) -> dict:
    """The mixed-precision advice of the module docstring: ``{"keep": [units], "ignore": "--ignore …",
    "modules": [names]}``, or ``{"none": why}`` when no unit can be kept (``ignore``: the run's own patterns)."""
    ranking = section["ranking"]
    keep = min(KEEP, (len(ranking) - 1) // 2, sum(1 for row in ranking if row["kl"] > 0))
    if keep < 1:
        why = (f"{len(ranking)} units: keeping one unquantized would leave no strict majority quantized"
               if len(ranking) < 3 else "no unit changed the base's predictions (KL 0)")
        return {"none": why}
    kept = ranking[:keep]
    patterns = list(ignore) + [_pattern(row, section, model) for row in kept]
    return {"keep": [row["unit"] for row in kept], "ignore": "--ignore " + ",".join(patterns),
            "modules": mixed_ignore(section, model, keep)}


def check_sensitivity(config, ctx, where: str = "forgetless.apply") -> None:
    """``--sensitivity`` needs the run's base model (``ctx.teacher``): one error before any work (``where``:
    what runs the method without one)."""
    if getattr(config, "sensitivity", "none") != "none" and not getattr(config, "bits_budget", 0) and (
            ctx is None or getattr(ctx, "teacher", None) is None):
        raise ConfigError(f"--sensitivity {config.sensitivity}: compares each quantized unit with the base model, "
                          f"which only a compress run holds (forgetless compress / run); {where} has none")


def sensitivity_section(method) -> dict:
    """``{"sensitivity": …}`` of a method's card section when it measured one."""
    section = getattr(method, "sensitivity", None)
    return {"sensitivity": section} if section else {}


def run_sensitivity(model: nn.Module, ctx, config) -> dict | None:
    """``measure`` for a quantizing method's ``config`` (its ``sensitivity`` option) after it quantized
    ``model``: the base is the run's (``ctx.teacher``), the texts its calibration texts; a note for the card."""
    if config.sensitivity == "none" or config.bits_budget:  # a budget measured its units before (``budget.py``)
        return None
    check_sensitivity(config, ctx)
    section = measure(ctx.teacher.eval(), model, sensitivity_batches(ctx, config.name), config.sensitivity)
    advice = mixed_advice(section, model, list(getattr(config, "ignore", [])))
    section["mixed"] = advice
    section["mixed_ignore"] = advice.get("modules", [])
    top = ", ".join(f"{r['unit']} ({r['kl_share']:.0%})" for r in section["ranking"][:3])
    ctx.notes.append(f"{config.name} sensitivity ({config.sensitivity}, each unit quantized alone in the base, KL on "
                     f"{section['tokens']} calibration tokens, {section['seconds']:g} s): the most sensitive {top}; "
                     f"the whole model's KL {section['whole_model']['kl']:.3g} nats per {section['per']}")
    return section


def sensitivity_batches(ctx, name: str) -> list[dict]:
    """The calibration batches a sensitivity measure reads (method ``name``'s, here and in ``budget.py``):
    ``TEXTS`` texts of at most ``TOKENS`` tokens, ``BATCH`` a forward."""
    from .._shared.calibration import calibration_batches

    return calibration_batches(ctx, types.SimpleNamespace(name=name, calibration_examples=TEXTS,
                                                          calibration_length=TOKENS, calibration_batch=BATCH))
