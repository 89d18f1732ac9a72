"""The int8 finding restated (issue 39): on SmolLM2-135M, WikiText-2 perplexity of the base, of int8 with
one activation scale per tensor (PyTorch's dynamic int8, ``quantize --dtype int8-per-tensor``), of W8A8
with one scale per token (``--dtype int8-per-token``: int8 weights per output row, int8 inputs per token,
round-to-nearest), and of the same after SmoothQuant (α 0.8, calibrated on XSum); plus what the per-tensor
scheme's outlier check measures (``methods/quantize/outliers.py``).

    python benchmarks/int8_llm_schemes.py --data-dir ../shared/data --windows 10

Perplexity as the LLM card computes it (``metrics/perplexity.py``: WikiText-2 test rows joined with two
newlines, non-overlapping windows of 2048 tokens, a seeded ``--windows`` of them); one JSON line per variant.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace


def variants(model, ctx, calibration: int):
    """``(name, model)`` of each scheme, in order (the per-tensor one prints its outlier check first)."""
    import copy

    from forgetless.methods._shared.calibration import calibration_batches
    from forgetless.registry import METHODS

    yield "base", model
    for dtype in ("int8-per-tensor", "int8-per-token"):
        method = METHODS.build(METHODS.make_config("quantize", {"dtype": dtype}))
        quantized = method.compress(copy.deepcopy(model), ctx)
        if dtype == "int8-per-tensor":
            print(json.dumps({"outliers": method.report_section()["quantization"].get("outliers")}), flush=True)
        yield f"quantize {dtype}", quantized
    smooth = METHODS.build(METHODS.make_config("smoothquant", {"alpha": 0.8, "calibration_examples": calibration,
                                                               "calibration_length": 512}))
    smoothed = copy.deepcopy(model)
    smooth.calibrate(smoothed, calibration_batches(ctx, smooth.config))
    yield "smoothquant α 0.8 (no quantization)", smoothed
    per_token = METHODS.build(METHODS.make_config("quantize", {"dtype": "int8-per-token"}))
    yield "smoothquant α 0.8 + quantize int8-per-token", per_token.compress(copy.deepcopy(smoothed), ctx)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--windows", type=int, default=10, help="seeded WikiText-2 windows of 2048 tokens")
    parser.add_argument("--calibration", type=int, default=32, help="SmoothQuant's calibration texts (XSum)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    from forgetless.methods._shared.calibration import calibration_texts
    from forgetless.metrics.perplexity import default_window, join, perplexity
    from forgetless.models.loading import load_causal_lm

    torch.set_num_threads(args.threads)
    model, tokenizer = load_causal_lm("smollm2")
    model.eval()
    rows = Path(args.data_dir, "llm/wikitext2/wiki.test.raw").read_text(encoding="utf-8").replace("\r\n", "\n")
    wiki = join(rows.splitlines(keepends=True))  # as llm/suite.py reads it for the card
    ctx = SimpleNamespace(notes=[], calibration=calibration_texts("xsum", args.data_dir), tokenizer=tokenizer,
                          kind=None, task=None, seed=0)
    for name, quantized in variants(model, ctx, args.calibration):
        start = time.perf_counter()
        result = perplexity(quantized, tokenizer, wiki, default_window(quantized), cap=args.windows)
        print(json.dumps({"variant": name, "perplexity": result["perplexity"], "windows": result["windows"],
                          "window": result["window"], "seconds": time.perf_counter() - start}), flush=True)


if __name__ == "__main__":
    main()
