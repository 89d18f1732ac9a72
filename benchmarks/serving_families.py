"""Every scheme on a tiny random model of other families, served by vLLM (issue 55): the serving check.

    python benchmarks/serving_families.py OUT [FAMILY ...]     # in an environment with vLLM (docs/shipping.md)
    python benchmarks/serving_families.py OUT --folders-only   # the folders alone (tiny: no vLLM, seconds)
    python benchmarks/serving_families.py OUT --table          # the families × schemes grid of OUT/results.json

For each family (default: qwen3, mistral, phi3, gemma3_text) a tiny model with random weights (2 layers,
hidden 128, 2 query heads and 1 key / value head of 64 — vLLM's CPU attention takes head sizes from 32 —,
FFN 256, SmolLM2's tokenizer) is built offline and saved as safetensors to ``OUT/<family>/base``; vLLM
checks it first (``serving.check.serve_check``: its greedy answers against forgetless's), and where it
serves, each scheme of ``serving_schemes.SCHEMES`` is written with the scheme's own methods (16 WikiText-2
calibration texts; 2:4 is Wanda 2:4 saved dense) to ``OUT/<family>/<scheme>`` and checked the same way.
Each step is written to ``OUT/results.json`` as it comes and a rerun skips what is there (resumable); the
grid is printed at the end. Random weights make near ties common: the gap at the first differing token
says whether a difference is rounding (bf16 in vLLM, float32 here) or the folder.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from serving_schemes import SCHEMES, arguments, calibration_texts, step  # noqa: E402 - the SmolLM2 benchmark's helpers

TINY = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, head_dim=64, max_position_embeddings=512)
FAMILIES = {  # model type → what its tiny config needs beyond TINY (transformers' config class of that type)
    "qwen3": {},
    "mistral": {"sliding_window": None},
    "phi3": {},  # fused qkv_proj and gate_up_proj
    "gemma3_text": {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 64},  # tied head
}


def tokenizer():
    """SmolLM2's tokenizer (49,152 ids, an end-of-sequence token): the tiny models' vocabulary."""
    import transformers

    from forgetless.models.loading import resolve_model_path

    return transformers.AutoTokenizer.from_pretrained(resolve_model_path("smollm2"))


def tiny_model(family: str, vocab: int, pad: int):
    """A random ``family`` causal LM of the TINY sizes (seeded)."""
    import torch
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    config = transformers.CONFIG_MAPPING[family](vocab_size=vocab, pad_token_id=pad, **TINY, **FAMILIES[family])
    torch.manual_seed(0)
    return getattr(transformers, MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[family])(config).eval()


def make_base(family: str, folder: Path) -> dict:
    """The tiny ``family`` model and its tokenizer saved to ``folder`` (safetensors)."""
    tok = tokenizer()
    model = tiny_model(family, len(tok), tok.pad_token_id or 0)
    model.save_pretrained(folder, safe_serialization=True)
    tok.save_pretrained(folder)
    return {"made": True, "path": str(folder), "parameters": sum(p.numel() for p in model.parameters())}


def make_scheme(scheme: str, base: Path, folder: Path) -> dict:
    """``base`` compressed with ``scheme``'s own methods (2:4: Wanda 2:4) and saved to ``folder``."""
    import forgetless
    from forgetless.models.loading import load_causal_lm
    from forgetless.registry import METHODS
    from forgetless.schemes import scheme_methods

    try:
        model, tok = load_causal_lm(str(base))
        stack = [METHODS.make_config("wanda", {"pattern": "2:4"})] if scheme == "2:4" else scheme_methods(scheme)
        texts = calibration_texts() if any(m.name != "rtn" for m in stack) else None
        model = forgetless.apply(model, stack, calibration=texts, tokenizer=tok)
        forgetless.save_model(model, folder, tok, metadata={"scheme": scheme})
    except Exception as exc:  # noqa: BLE001 - recorded in the grid, the other schemes go on
        return {"made": False, "why": f"{type(exc).__name__}: {exc}"[:300]}
    return {"made": True, "path": str(folder)}


def run(out: Path, families: list[str], checks: bool = True) -> dict:
    """Every family's folders (light: tiny models), then their checks (vLLM: heavy); ``checks`` False
    writes the folders only."""
    from forgetless.serving.check import serve_check

    out.mkdir(parents=True, exist_ok=True)
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {}
    folders = {}
    for family in families:
        base = folders[family, "base"] = out / family / "base"
        step(results, f"{family} base folder", out, lambda: make_base(family, base))
        for scheme in SCHEMES:
            folder = out / family / scheme.replace(":", "-")
            if step(results, f"{family} {scheme} folder", out, lambda: make_scheme(scheme, base, folder))["made"]:
                folders[family, scheme] = folder
    for family in families if checks else ():
        if not step(results, f"{family} base check", out, lambda: serve_check(folders[family, "base"])).get("served"):
            continue  # the family itself is refused: its reason stands for every scheme
        for scheme in SCHEMES:
            if (family, scheme) in folders:
                step(results, f"{family} {scheme} check", out, lambda: serve_check(folders[family, scheme]))
    return results


def short(check: dict | None) -> str:
    """A check in a few words (``served, 3/8 identical; 5 part, 5 at a near tie, max gap 0.003 nats``), or
    vLLM's reason cut to 120 characters."""
    if not check:
        return "not run"
    if not check.get("served"):
        return f"refused: {check['why'][:120]}"
    s = check["summary"]
    parted = s["prompts"] - s["identical"]
    gap = f", max gap {s['largest_gap_ours']:.3f} nats" if s["largest_gap_ours"] is not None else ""
    return f"served, {s['identical']}/{s['prompts']} identical" + \
        (f"; {parted} part, {s['near_ties']} at a near tie{gap}" if parted else "")


def cell(results: dict, family: str, scheme: str) -> str:
    """One grid cell: identical / part with the largest gap, vLLM's reason, or why no folder was written."""
    base = results.get(f"{family} base check")
    if base and not base.get("served"):
        return "family not served"
    made = results.get(f"{family} {scheme} folder")
    if made and not made["made"]:
        return f"not written: {made['why'][:200]}"
    return short(results.get(f"{family} {scheme} check"))


def grid(results: dict, families: list[str]) -> list[str]:
    """The families × schemes grid, one row per family, its base model first."""
    columns = ["base", *SCHEMES]
    lines = ["| family | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for family in families:
        cells = [short(results.get(f"{family} base check"))] + [cell(results, family, s) for s in SCHEMES]
        lines.append(f"| {family} | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    args = arguments(__doc__, list(FAMILIES), "family", ("--folders-only", "write the folders, serve nothing"),
                     "python benchmarks/serving_families.py /tmp/families --table")
    done = json.loads((args.out / "results.json").read_text()) if args.table else \
        run(args.out, args.names, checks=not args.folders_only)
    print("\n".join(grid(done, args.names)))
