"""GPTQ (Frantar et al. 2022) against round-to-nearest at the same bits / group size, and SparseGPT
50% beside them, on the first decoder layers of a real model: per-linear relative reconstruction
error ‖WX − ŴX‖ / ‖WX‖ on the calibration inputs (each layer fed by its compressed predecessors,
``run_layer_by_layer``), stored bits per weight, and compression wall time (interleaved repeats,
median and range, with the load average). No perplexity here (see ``oneshot_vs_llmcompressor.py``).

    python benchmarks/oneshot_methods.py --model ~/.cache/forgetless/models/smollm2-… \\
        --data-dir ../shared/data --layers 2 --calibration 16 --seq-len 128 --repeats 2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

from forgetless.methods._shared.hessian import relative_reconstruction_error
from forgetless.methods._shared.sequential import run_layer_by_layer
from forgetless.quantization.compressed_tensors import grouped_storage
from forgetless.quantization.ints import round_to_nearest
from forgetless.registry import METHODS

CONFIGS = {  # name → (method, options); "rtn": round to nearest on GPTQ's grid, no error feedback
    "rtn-w4g128": ("rtn", {"bits": 4, "group_size": 128}),
    "gptq-w4g128": ("gptq", {"bits": 4, "group_size": 128}),
    "gptq-w4g128-act": ("gptq", {"bits": 4, "group_size": 128, "act_order": True}),
    "gptq-w4g64": ("gptq", {"bits": 4, "group_size": 64}),
    "gptq-w4g64-static": ("gptq", {"bits": 4, "group_size": 64, "static_groups": True}),
    "rtn-w3g128": ("rtn", {"bits": 3, "group_size": 128}),
    "gptq-w3g128": ("gptq", {"bits": 3, "group_size": 128}),
    "sparsegpt-50": ("sparsegpt", {"sparsity": 0.5}),
}


def load(model_dir: str, layers: int):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True, trust_remote_code=False,
                                                 dtype=torch.float32).eval()
    model.model.layers = model.model.layers[:layers]
    return model, AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)


def calibration(tokenizer, data_dir: Path, count: int, length: int) -> list[dict]:
    docs = [json.loads(line)["document"] for line in (data_dir / "xsum" / "test_1000_llm_decoding.jsonl").open()]
    ids = [row[:length] for row in tokenizer(docs, add_special_tokens=False)["input_ids"] if len(row) >= length][:count]
    return [{"input_ids": torch.tensor(ids[i:i + 8]), "attention_mask": torch.ones(len(ids[i:i + 8]), length,
                                                                                    dtype=torch.long)}
            for i in range(0, len(ids), 8)]


def run(config: str, args) -> dict:
    method_name, options = CONFIGS[config]
    model, tokenizer = load(args.model, args.layers)
    batches = calibration(tokenizer, Path(args.data_dir), args.calibration, args.seq_len)
    errors, quantized = [], {}

    def rtn(stack, index, layer, stats):
        for name, (module, acc) in stats.items():
            q = round_to_nearest(module.weight.data, options["bits"], options["group_size"])
            errors.append(relative_reconstruction_error(module.weight.data, q.dequantize(), acc.hessian))
            quantized[f"{index}.{name}"] = q
            module.weight.data.copy_(q.dequantize())

    start = time.perf_counter()
    with torch.no_grad():
        if method_name == "rtn":
            run_layer_by_layer(model, batches, rtn)
        else:
            method = METHODS.build(METHODS.make_config(method_name, options))
            method.calibrate(model, batches)
            errors = [e["reconstruction_error"] for e in method.layers]
            if method_name == "gptq":
                quantized = {str(i): m.grouped_ints for i, m in enumerate(model.modules())
                             if hasattr(m, "grouped_ints")}
    seconds = time.perf_counter() - start
    storage = grouped_storage(quantized) if quantized else {}
    return {"config": config, "seconds": seconds, "load": os.getloadavg()[0], "linears": len(errors),
            "error_mean": statistics.fmean(errors), "error_max": max(errors),
            "bits_per_weight": storage.get("bits_per_weight")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--calibration", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rows: dict[str, list[dict]] = {}
    for repeat in range(args.repeats):  # interleaved: every config once per round
        for config in args.configs.split(","):
            row = run(config, args)
            rows.setdefault(config, []).append(row)
            print(json.dumps({"repeat": repeat, **row}), flush=True)
    print("\n| config | linears | rel. reconstruction error mean / max | bits per weight (quantized layers) | "
          "seconds, median [min–max] | load average |\n|---|---:|---:|---:|---:|---:|")
    for config, runs in rows.items():
        first, seconds = runs[0], [r["seconds"] for r in runs]
        bits = f"{first['bits_per_weight']:.3f}" if first["bits_per_weight"] else "32 (zeros stored)"
        print(f"| {config} | {first['linears']} | {first['error_mean']:.4f} / {first['error_max']:.4f} | {bits} | "
              f"{statistics.median(seconds):.1f} [{min(seconds):.1f}–{max(seconds):.1f}] | "
              f"{min(r['load'] for r in runs):.1f}–{max(r['load'] for r in runs):.1f} |")


if __name__ == "__main__":
    main()
