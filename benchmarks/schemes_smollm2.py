"""Issue 39's schemes on SmolLM2-135M, measured on WikiText-2, with each saved folder reloaded by plain
transformers in a fresh process:

* the int8 finding restated: the base; int8 with one activation scale per tensor (PyTorch's dynamic int8,
  ``quantize --dtype int8-per-tensor``, with what its outlier check measures); W8A8 with one scale per
  token (``--dtype int8-per-token``: int8 weights per output row, int8 inputs per token, round-to-nearest);
  the same after SmoothQuant (α 0.8);
* every ``--scheme`` (``forgetless/schemes.py``: W4A16, W4A16-AWQ, W8A8-INT8, FP8-DYNAMIC, FP8, W8A16;
  groups of 64 where the preset's 128 does not divide SmolLM2's 576-wide layers), applied with
  ``forgetless.apply`` on ``--calibration`` XSum texts cut at ``--calibration-length`` tokens, saved with
  ``save_model``, and loaded by plain ``from_pretrained`` (compressed-tensors installed; the asymmetric AWQ
  folder with ``CompressedTensorsConfig(dequantize=True)``) in a fresh process: its logits on two WikiText-2
  windows of 128 tokens compared bit for bit with the in-memory model's;
* the sensitivity ranking of ``--sensitivity-of``'s decoder blocks (``--sensitivity blocks``).

    python benchmarks/schemes_smollm2.py --data-dir ../shared/data --windows 10 --out runs/schemes

Perplexity as the LLM card computes it (``metrics/perplexity.py``: WikiText-2 test rows joined with two
newlines as ``llm/suite.py`` reads them, non-overlapping windows of 2048 tokens, a seeded ``--windows`` of
them); one JSON line per variant, with the seconds it took and the 1-minute load.
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
PLAIN = """
import hashlib, sys, torch, transformers
ids = torch.load(sys.argv[2])
kwargs = {"quantization_config": transformers.CompressedTensorsConfig(dequantize=True)} if sys.argv[3] == "1" else {}
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1], use_safetensors=True, **kwargs)
with torch.no_grad():
    print(hashlib.sha256(model(input_ids=ids).logits.numpy().tobytes()).hexdigest())
"""


def int8_variants(model, ctx, calibration: int):
    """``(name, model)`` of the int8 restatement (the per-tensor one prints its outlier check first)."""
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
                                                               "calibration_length": 256}))
    smoothed = copy.deepcopy(model)
    smooth.calibrate(smoothed, calibration_batches(ctx, smooth.config))
    per_token = METHODS.build(METHODS.make_config("quantize", {"dtype": "int8-per-token"}))
    yield "smoothquant α 0.8 + quantize int8-per-token", per_token.compress(smoothed, ctx)


def scheme_stack(name: str, calibration: int, length: int) -> list:
    """The scheme's method configs (its preset), groups of 64 where it asks 128, the calibration size given."""
    from forgetless import tree
    from forgetless.config import RunConfig
    from forgetless.registry import METHODS

    options = {"calibration_examples": calibration, "calibration_length": length}
    config = tree.build(RunConfig, {"scheme": name, "model": "smollm2"})
    stack = []
    for item in (config.method, *config.then):
        values = tree.to_recipe(item)
        values.pop("name")
        if values.get("group_size") == 128:
            values["group_size"] = 64
        if "calibration_examples" in values:
            values.update(options)
        stack.append(METHODS.make_config(item.name, values))
    return stack


def plain_logits_equal(model, folder: Path, ids, asymmetric: bool) -> bool:
    """Plain transformers, in a fresh process, gives the same logits bit for bit."""
    import torch

    torch.save(ids, folder / "probe_ids.pt")
    done = subprocess.run([sys.executable, "-c", PLAIN, str(folder), str(folder / "probe_ids.pt"),
                           "1" if asymmetric else "0"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    if done.returncode:
        print(done.stderr[-2000:], file=sys.stderr)
        return False
    with torch.no_grad():
        return done.stdout.strip().splitlines()[-1] == hashlib.sha256(model(input_ids=ids).logits.numpy().tobytes()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--windows", type=int, default=10, help="seeded WikiText-2 windows of 2048 tokens")
    parser.add_argument("--calibration", type=int, default=16, help="calibration texts (XSum)")
    parser.add_argument("--calibration-length", type=int, default=256, help="tokens per calibration text")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/schemes")
    parser.add_argument("--sensitivity-of", default="W4A16", help="the scheme whose blocks are ranked ('' : none)")
    parser.add_argument("--schemes", help="the schemes to run, comma-separated (default: every --scheme preset)")
    parser.add_argument("--no-int8", dest="int8", action="store_false", help="skip the base and int8 variants")
    args = parser.parse_args()

    import torch

    import forgetless
    from forgetless.methods._shared.calibration import calibration_texts
    from forgetless.metrics.perplexity import default_window, join, perplexity
    from forgetless.models.io import save_model
    from forgetless.models.loading import load_causal_lm
    from forgetless.schemes import SCHEMES

    torch.set_num_threads(args.threads)
    model, tokenizer = load_causal_lm("smollm2")
    model.eval()
    rows = Path(args.data_dir, "llm/wikitext2/wiki.test.raw").read_text(encoding="utf-8").replace("\r\n", "\n")
    wiki = join(rows.splitlines(keepends=True))  # as llm/suite.py reads it for the card
    texts = calibration_texts("xsum", args.data_dir)
    probe = tokenizer(wiki, return_tensors="pt")["input_ids"][:, :256].reshape(2, 128)

    def report(name: str, quantized, **extra) -> None:
        start = time.perf_counter()
        result = perplexity(quantized, tokenizer, wiki, default_window(quantized), cap=args.windows)
        print(json.dumps({"variant": name, "perplexity": result["perplexity"], "windows": result["windows"],
                          "window": result["window"], "seconds": time.perf_counter() - start,
                          "load": os.getloadavg()[0], **extra}), flush=True)

    ctx = SimpleNamespace(notes=[], calibration=texts, tokenizer=tokenizer, kind=None, task=None, seed=0)
    for name, quantized in int8_variants(model, ctx, args.calibration) if args.int8 else ():
        report(name, quantized)
    for scheme in args.schemes.split(",") if args.schemes else SCHEMES:
        start = time.perf_counter()
        stack = scheme_stack(scheme, args.calibration, args.calibration_length)
        reads = any(config.calibration == "text" for config in stack)  # FP8-DYNAMIC (rtn) reads none
        quantized = forgetless.apply(copy.deepcopy(model), stack, calibration=texts if reads else None,
                                     tokenizer=tokenizer)
        seconds = time.perf_counter() - start
        folder = Path(args.out) / scheme
        save_model(quantized, folder, tokenizer)
        equal = plain_logits_equal(quantized, folder, probe, asymmetric=scheme == "W4A16-AWQ")
        report(f"--scheme {scheme}", quantized, compress_seconds=seconds, plain_transformers_equal=equal,
               format=json.loads((folder / "config.json").read_text())["quantization_config"]["format"])
        if scheme == args.sensitivity_of:
            print(json.dumps({"sensitivity": sensitivity(model, quantized, ctx)}), flush=True)


def sensitivity(base, quantized, ctx) -> dict:
    """``--sensitivity blocks`` of one scheme (``methods/_shared/sensitivity.py``), as a run computes it."""
    from forgetless.methods._shared.calibration import calibration_batches
    from forgetless.methods.quantize import sensitivity as units

    texts = SimpleNamespace(name="sensitivity", calibration_examples=units.TEXTS, calibration_length=units.TOKENS,
                            calibration_batch=units.BATCH)
    section = units.measure(base, quantized, calibration_batches(ctx, texts), "blocks")
    return {**section, "mixed_ignore": units.mixed_ignore(section, quantized)}


if __name__ == "__main__":
    main()
