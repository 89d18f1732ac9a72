"""Quantized experts on disk, as llm-compressor writes them and transformers 5 reads them: one
compressed-tensors ``pack-quantized`` linear per expert and projection, under the names of the
family's *checkpoint* layout (Mixtral ``block_sparse_moe.experts.3.w1``, Qwen2-MoE / OLMoE
``mlp.experts.3.gate_proj``). transformers' loading converters merge such per-expert tensors into the
fused 3-D parameters, decompressing them first (``CompressedTensorsDequantize``, with the scheme of the
first config group naming a class): checked, plain ``from_pretrained`` gives the in-memory logits.

The layout is transformers' own, not written down here: ``checkpoint_pieces`` runs its reverse
conversion (``revert_weight_conversion``, what ``save_pretrained`` writes) on a small stand-in of
each fused parameter, the input dimension cut to 2 and every entry numbering its (parameter,
expert, output row, input column), and reads where each entry went. A parameter whose every piece is
one expert's output rows with its input columns in order is *splittable*; a family whose checkpoint
keeps experts fused (GPT-OSS, Llama 4, Granite-MoE) is not: its quantized experts are saved as their
float32 values on the grid (stock loading exact, no packing; the card says so).

Written by ``io.save_weights`` (``quantized_checkpoint``) and streamed calibration
(``packed_experts`` per layer); read back by ``forgetless.load_model`` (``unpack_experts``), checked by
the stock-loading check (``stock_pieces``). Streamed calibration also reads a dense folder in the
checkpoint layout (``checkpoint_sources``: renamed tensors through ``checkpoint_names``, experts
``assemble``d from their pieces).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from ..quantization.compressed_tensors import grouped_storage, quantized_linears, storage_note
from ..quantization.format import PACKED
from ..quantization.ints import GroupedInts
from ..quantization.layers import unpacked_modules
from .experts import EXPERT_CODES, first_projection, is_fused_experts


@dataclass
class Piece:
    """One checkpoint tensor ``name`` (ending ``.weight``): rows ``rows`` of expert ``expert``'s
    (out × in) matrix of a fused parameter."""

    name: str
    expert: int
    rows: torch.Tensor


def fused_parameters(model: nn.Module) -> dict[str, tuple[nn.Module, str]]:
    """``{parameter name: (experts module, local name)}`` of every fused expert weight of ``model``."""
    found = {}
    for name, module in model.named_modules():
        if is_fused_experts(module):
            for local in (first_projection(module), "down_proj"):
                found[f"{name}.{local}"] = (module, local)
    return found


def checkpoint_pieces(model: nn.Module) -> dict[str, list[Piece]]:
    """``{fused parameter name: its pieces}`` for the splittable fused parameters (module docstring)."""
    from transformers.core_model_loading import revert_weight_conversion

    stand_ins, layout, offset = {}, [], 0
    for name, (module, local) in fused_parameters(model).items():
        shape = list(getattr(module, local).shape)
        inputs = 1 if module.is_transposed else 2  # the dimension of input features
        experts, rows = shape[0], shape[3 - inputs]
        cells = offset + torch.arange(experts * rows, dtype=torch.float64).view(experts, rows, 1)
        index = cells * 2 + torch.arange(2, dtype=torch.float64)  # entry (e, r, k): 2 · cell + k
        stand_ins[name] = index.transpose(1, 2).contiguous() if module.is_transposed else index
        layout.append((name, offset, experts, rows))
        offset += experts * rows
    pieces: dict[str, list[Piece]] = {name: [] for name, *_ in layout}
    broken = set()
    for target, tensor in (revert_weight_conversion(model, stand_ins) if stand_ins else {}).items():
        found = _piece(target, tensor, layout)
        if found is None:
            cells = torch.div(tensor.flatten(), 2, rounding_mode="floor").long()
            broken.update(name for name, start, experts, rows in layout
                          if ((cells >= start) & (cells < start + experts * rows)).any())
        else:
            pieces[found[0]].append(found[1])
    return {name: pieces[name] for name, _, experts, rows in layout
            if name not in broken and _covers(pieces[name], experts, rows)}


def _piece(target: str, tensor: torch.Tensor, layout: list) -> tuple[str, Piece] | None:
    """``(parameter name, Piece)`` when ``tensor`` holds rows of one expert with both columns in order."""
    if tensor.dim() != 2 or tensor.shape[1] != 2 or not target.endswith(".weight") \
            or not bool((tensor[:, 1] - tensor[:, 0] == 1).all()) or bool((tensor[:, 0] % 2).any()):
        return None
    cells = torch.div(tensor[:, 0], 2, rounding_mode="floor").long()
    for name, start, experts, rows in layout:
        if start <= int(cells.min()) and int(cells.max()) < start + experts * rows:
            expert, row = torch.div(cells - start, rows, rounding_mode="floor"), (cells - start) % rows
            return (name, Piece(target, int(expert[0]), row)) if bool((expert == expert[0]).all()) else None
    return None


def _covers(pieces: list[Piece], experts: int, rows: int) -> bool:
    """Every row of every expert in exactly one piece."""
    cells = torch.cat([piece.rows + piece.expert * rows for piece in pieces]) if pieces else torch.zeros(0)
    return len(cells) == experts * rows and len(torch.unique(cells)) == len(cells)


# ----- quantized experts: write, read, what stock loading expects ---------------------------------------
def _matrix(module: nn.Module, local: str, expert: int) -> torch.Tensor:
    """Expert ``expert``'s (out × in) matrix of the fused parameter ``local``."""
    weight = getattr(module, local).data[expert]
    return weight.T if module.is_transposed else weight


def expert_codes(root: nn.Module) -> dict[str, tuple[nn.Module, str, dict[int, GroupedInts]]]:
    """``{fused parameter: (module, local name, {expert: codes})}`` under ``root`` where every expert was
    quantized (``experts.EXPERT_CODES``) and the weights still equal the codes (nothing changed them since)."""
    found = {}
    for name, (module, local) in fused_parameters(root).items():
        codes = {e: q for (param, e), q in getattr(module, EXPERT_CODES, {}).items() if param == local}
        if len(codes) == getattr(module, local).shape[0] and all(
                torch.equal(_matrix(module, local, e), q.dequantize()) for e, q in codes.items()):
            found[name] = (module, local, codes)
    return found


def packed_experts(root: nn.Module, pieces: dict | None = None,
                   prefix: str = "") -> tuple[dict[str, GroupedInts], list[str]]:
    """``({checkpoint module name: codes}, fused parameters they stand for)``: the quantized experts
    under ``root`` (named ``prefix`` in the model whose ``checkpoint_pieces`` are ``pieces``; default:
    ``root`` is the model) of splittable parameters, one packed linear per piece (module docstring)."""
    codes = expert_codes(root)
    pieces = (checkpoint_pieces(root) if codes else {}) if pieces is None else pieces
    packed, replaced = {}, []
    for name, (_, _, per_expert) in codes.items():
        for piece in pieces.get(prefix + name, ()):
            q = per_expert[piece.expert]
            packed[piece.name.removesuffix(".weight")] = dataclasses.replace(
                q, codes=q.codes[piece.rows], scales=q.scales[piece.rows], zeros=q.zeros[piece.rows])
        replaced += [prefix + name] if prefix + name in pieces else []
    return packed, replaced


def checkpoint_names(model: nn.Module) -> dict[str, str]:
    """``{tensor name in the model: its name in the family's checkpoint layout}`` for the tensors the
    reverse conversion renames one to one (Mixtral ``mlp.gate`` → ``block_sparse_moe.gate``)."""
    from transformers.core_model_loading import revert_weight_conversion

    fused = fused_parameters(model)  # split into pieces instead (``checkpoint_pieces``)
    names = [name for name in model.state_dict() if name not in fused]
    stand_ins = {name: torch.tensor([float(i)]) for i, name in enumerate(names)}
    found = {}
    for target, tensor in revert_weight_conversion(model, stand_ins).items():
        if tensor.numel() == 1 and target != names[int(tensor)]:
            found[names[int(tensor)]] = target
    return found


def unpack_experts(model: nn.Module, tensors: dict, args: dict) -> None:
    """Replace the packed pieces in ``tensors`` (a checkpoint's, ``args``: their scheme's weights) by
    the fused parameters they make, and keep the codes on the experts modules (as quantizing did)."""
    fused = fused_parameters(model)
    for name, pieces in checkpoint_pieces(model).items():
        if not all(f"{p.name.removesuffix('.weight')}.weight_packed" in tensors for p in pieces):
            continue
        module, local = fused[name]
        parts: dict[int, list[tuple[torch.Tensor, GroupedInts]]] = {}
        for piece in pieces:
            q = GroupedInts.from_stored(tensors, piece.name.removesuffix(".weight"), args)
            parts.setdefault(piece.expert, []).append((piece.rows, q))
        codes = {e: _stack_rows(found) for e, found in sorted(parts.items())}
        dense = torch.stack([q.dequantize() for q in codes.values()])
        tensors[name] = dense.transpose(1, 2).contiguous() if module.is_transposed else dense
        setattr(module, EXPERT_CODES, {**getattr(module, EXPERT_CODES, {}),
                                       **{(local, e): q for e, q in codes.items()}})


def _stack_rows(parts: list[tuple[torch.Tensor, GroupedInts]]) -> GroupedInts:
    """One expert's codes from its row pieces."""
    order = torch.argsort(torch.cat([rows for rows, _ in parts]))
    first = parts[0][1]
    return dataclasses.replace(first, **{key: torch.cat([getattr(q, key) for _, q in parts])[order]
                                         for key in ("codes", "scales", "zeros")})


def stock_pieces(model: nn.Module, header: dict) -> dict[str, list[tuple[str, int, int]]]:
    """``{fused parameter: [(piece module name, rows, input columns)]}`` for the pieces a checkpoint
    (``header``) stores packed: stock loading reads those instead of the fused parameter."""
    fused = fused_parameters(model)
    found = {}
    for name, pieces in checkpoint_pieces(model).items():
        module, local = fused[name]
        columns = getattr(module, local).shape[1 if module.is_transposed else 2]
        if all(f"{p.name.removesuffix('.weight')}.weight_packed" in header for p in pieces):
            found[name] = [(p.name.removesuffix(".weight"), len(p.rows), columns) for p in pieces]
    return found


def quantized_checkpoint(model: nn.Module) -> tuple[dict, list[str], dict[str, dict]]:
    """What a compressed-tensors checkpoint of ``model`` stores quantized: ``({tensor prefix: codes},
    fused parameters the experts' pieces replace, {module name: scheme})`` (module names: the linears,
    schemes as ``quantization.compressed_tensors.module_scheme`` gives them, and the experts modules). Experts (integer codes,
    weight-only) are packed only under the linears' one scheme (stock loading decompresses them with
    the first config group's); otherwise they stay float32."""
    linears = quantized_linears(model)
    experts, replaced = packed_experts(model)
    expert_schemes = [{"format": PACKED, "weights": q.weights_args(), "input_activations": None}
                      for q in experts.values()]
    distinct = {repr(sorted((k, repr(v)) for k, v in scheme.items()))
                for scheme in (*(scheme for _, scheme in linears.values()), *expert_schemes)}
    if len(distinct) > 1:
        experts, replaced = {}, []
    schemes = {name: scheme for name, (_, scheme) in linears.items()}
    fused = fused_parameters(model)
    names = {id(module): name for name, module in model.named_modules()}
    for parameter in replaced:
        schemes[names[id(fused[parameter][0])]] = expert_schemes[0]
    return {**{name: codes for name, (codes, _) in linears.items()}, **experts}, replaced, schemes


def experts_scheme(config: dict) -> dict | None:
    """The weights scheme stock loading decompresses experts with: the first config group naming a class."""
    groups = list((config.get("config_groups") or {}).values())
    named = [g for g in groups if any(not t.startswith("re:") for t in g.get("targets") or [])]
    return (named or groups or [{}])[0].get("weights")


def storage_notes(method: str, model: nn.Module) -> tuple[dict, list[str], str | None]:
    """What a quantizing method's card says about storage: ``(grouped_storage of what is stored
    quantized, notes, the compressed-tensors format)``, the notes naming quantized weights saved as
    float32 values on the grid."""
    packed, replaced, schemes = quantized_checkpoint(model)
    storage = grouped_storage(packed)
    forms = {scheme["format"] for scheme in schemes.values()}
    form = (forms.pop() if len(forms) == 1 else "mixed-precision") if forms else None
    notes = [storage_note(method, storage, form or PACKED)]
    dense = unpacked_modules(model, packed)
    if dense:  # GPT-2's Conv1D
        notes.append(f"{method}: {len(dense)} quantized layers (e.g. {dense[0]}) are not nn.Linear and are saved as "
                     "float32 (their values on the int grid): compressed-tensors packs nn.Linear only")
    fused = sorted(set(expert_codes(model)) - set(replaced))  # quantized in memory, not splittable
    if fused:
        notes.append(f"{method}: {len(fused)} fused expert weights (e.g. {fused[0]}) are saved as float32 (their values "
                     "on the int grid): this family's checkpoint keeps its experts fused, so no per-expert linear to pack")
    return storage, notes, form


def checkpoint_sources(model: nn.Module, names: list[str], available: set[str],
                       tied: list[list[str]]) -> tuple[dict[str, str], dict[str, list[Piece]]]:
    """Where a folder (tensor names ``available``) holds each tensor ``names`` of ``model``: ``({name:
    stored name}, {fused parameter: its pieces})``: under its own name, a tied alias (``tied``: groups)
    or its checkpoint-layout name (``checkpoint_names``), or, for fused experts, as per-expert pieces."""
    aliases = {group[0]: group for group in tied}
    renamed, pieces = checkpoint_names(model), checkpoint_pieces(model)
    stored, assembled = {}, {}
    for name in names:
        found = next((o for o in (*aliases.get(name, [name]), renamed.get(name)) if o in available), None)
        if found is not None:
            stored[name] = found
        elif name in pieces and all(p.name in available for p in pieces[name]):
            assembled[name] = pieces[name]
    return stored, assembled


def assemble(model: nn.Module, name: str, pieces: list[Piece], read) -> torch.Tensor:
    """The fused parameter ``name`` of ``model`` from its dense pieces (``read(tensor name)``)."""
    module, local = fused_parameters(model)[name]
    experts, *matrix = getattr(module, local).shape
    rows, columns = (matrix[1], matrix[0]) if module.is_transposed else (matrix[0], matrix[1])
    dense = None
    for piece in pieces:
        tensor = read(piece.name)
        dense = torch.empty(experts, rows, columns, dtype=tensor.dtype) if dense is None else dense
        dense[piece.expert, piece.rows] = tensor
    return dense.transpose(1, 2).contiguous() if module.is_transposed else dense
