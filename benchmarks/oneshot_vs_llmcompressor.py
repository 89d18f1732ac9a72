"""forgetless's one-shot solvers (Wanda, SparseGPT, GPTQ) against llm-compressor's modifiers on the
same model, the same calibration sequences and the same held-out text.

Each compression runs in a fresh process (wall time of the compression step and peak resident
memory of that process, which the model load may dominate), forgetless and llm-compressor
interleaved config by config; the compressed decoder-layer weights come back as safetensors and
both tools' models are evaluated here, by the same code. llm-compressor pins transformers
≤ 5.17, so it runs from its own virtual environment (``--llmc-python``), e.g.

    python -m venv --system-site-packages /work/venv-llmc && /work/venv-llmc/bin/pip install llmcompressor
    python benchmarks/oneshot_vs_llmcompressor.py --model ~/.cache/forgetless/models/smollm2-… \\
        --data-dir ../shared/data --llmc-python /work/venv-llmc/bin/python

Calibration: ``--calibration`` sequences of ``--seq-len`` tokens cut from the XSum sample's
documents (a seeded half of them); perplexity: the other half (``forgetless.metrics.perplexity``,
windows of ``--seq-len``). Mask agreement: the share of weights whose kept / pruned state is the
same in both models (over every pruned Linear of the decoder layers; ``lm_head`` is tied to the
embeddings in SmolLM2 and is never compressed by either).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

CONFIGS = {  # name → (method, options)
    "magnitude-50": ("magnitude", {"sparsity": 0.5}),
    "wanda-50": ("wanda", {"sparsity": 0.5}),
    "wanda-2:4": ("wanda", {"nm": (2, 4)}),
    "sparsegpt-50": ("sparsegpt", {"sparsity": 0.5}),
    "sparsegpt-2:4": ("sparsegpt", {"nm": (2, 4)}),
    "rtn-w4g128": ("rtn", {"bits": 4, "group_size": 128}),  # GPTQ's baseline: round to nearest, no calibration
    "gptq-w4g128": ("gptq", {"bits": 4, "group_size": 128}),
    "gptq-w4g128-act": ("gptq", {"bits": 4, "group_size": 128, "act_order": True}),  # llm-compressor's default
}


def texts(data_dir: Path, seed: int) -> tuple[list[str], list[str]]:
    rows = [json.loads(line)["document"] for line in (data_dir / "xsum" / "test_1000_llm_decoding.jsonl").open()]
    random.Random(seed).shuffle(rows)
    return rows[: len(rows) // 2], rows[len(rows) // 2:]


def calibration_ids(tokenizer, docs: list[str], count: int, length: int) -> list[list[int]]:
    """``count`` sequences of exactly ``length`` tokens, no padding (each from one document)."""
    out = []
    for ids in tokenizer(docs, add_special_tokens=False)["input_ids"]:
        if len(ids) >= length:
            out.append(ids[:length])
        if len(out) == count:
            return out
    raise SystemExit(f"only {len(out)} calibration documents have {length} tokens")


def load(model_dir: str):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True, trust_remote_code=False,
                                                 dtype=torch.float32).eval()
    return model, AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)


def forgetless_compress(model, batches, method: str, options: dict) -> None:
    import torch

    from forgetless.methods._shared.sequential import run_layer_by_layer
    from forgetless.methods.gptq.solver import gptq_quantize, round_to_nearest
    from forgetless.methods._shared.magnitude import magnitude_masks
    from forgetless.methods.sparsegpt.solver import sparsegpt_prune
    from forgetless.methods.wanda.metric import wanda_mask

    if method == "magnitude":  # the papers' baseline: per layer, no calibration
        for layer in model.model.layers:
            for linear in (m for m in layer.modules() if isinstance(m, torch.nn.Linear)):
                linear.weight.data *= magnitude_masks([linear.weight.data], options["sparsity"], "layer")[0]
        return
    if method == "rtn":  # GPTQ's baseline: every group's grid from its weights, each weight rounded alone
        for layer in model.model.layers:
            for linear in (m for m in layer.modules() if isinstance(m, torch.nn.Linear)):
                linear.weight.data.copy_(round_to_nearest(linear.weight.data, options["bits"],
                                                          options["group_size"]).dequantize())
        return

    def compress(stack, index, layer, stats):
        for linear, acc in stats.values():
            w = linear.weight.data
            if method == "wanda":
                new = w * wanda_mask(w, acc.column_norms(), options.get("sparsity", 0.5), options.get("nm"))
            elif method == "sparsegpt":
                new = sparsegpt_prune(w, acc.hessian, options.get("sparsity", 0.5), nm=options.get("nm")).weight
            else:
                new = gptq_quantize(w, acc.hessian, bits=options["bits"], group_size=options["group_size"],
                                    act_order=options.get("act_order", False)).dequantize()
            linear.weight.data.copy_(new)

    run_layer_by_layer(model, batches, compress)


def llmc_compress(model, ids, method: str, options: dict) -> None:
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.pruning import WandaPruningModifier
    from llmcompressor.modifiers.obcq import SparseGPTModifier
    from llmcompressor.modifiers.quantization import GPTQModifier

    structure = "{}:{}".format(*options["nm"]) if options.get("nm") else "0:0"
    sparsity = 0.5 if options.get("nm") else options.get("sparsity", 0.5)
    ignore = ["lm_head"]
    if method == "wanda":
        modifier = WandaPruningModifier(sparsity=sparsity, mask_structure=structure, targets=["Linear"], ignore=ignore)
    elif method == "sparsegpt":
        modifier = SparseGPTModifier(sparsity=sparsity, mask_structure=structure, targets=["Linear"], ignore=ignore)
    elif method == "gptq":
        modifier = GPTQModifier(targets=["Linear"], ignore=ignore, scheme="W4A16_ASYM",  # 4 bits, group 128
                                actorder="static" if options.get("act_order") else None)
    else:
        raise SystemExit(f"llm-compressor has no {method} run in this benchmark")
    dataset = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(r) for r in ids]})
    oneshot(model=model, dataset=dataset, recipe=[modifier], num_calibration_samples=len(ids),
            max_seq_length=len(ids[0]), shuffle_calibration_samples=False)


def worker(args) -> None:
    """One compression in this process; prints one JSON line."""
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    method, options = CONFIGS[args.config]
    calibration_docs, _ = texts(Path(args.data_dir), args.seed)
    model, tokenizer = load(args.model)
    ids = calibration_ids(tokenizer, calibration_docs, args.calibration, args.seq_len)
    start = time.perf_counter()
    if args.worker == "forgetless":
        batches = [{"input_ids": torch.tensor(ids[i:i + 8]), "attention_mask": torch.ones(len(ids[i:i + 8]), args.seq_len, dtype=torch.long)}
                   for i in range(0, len(ids), 8)]
        forgetless_compress(model, batches, method, options)
    else:
        llmc_compress(model, ids, method, options)
    seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    weights = {f"{i}.{name}": m.weight.data.detach().float().contiguous() for i, layer in enumerate(model.model.layers)
               for name, m in layer.named_modules() if isinstance(m, torch.nn.Linear)}
    save_file(weights, str(Path(args.out) / f"{args.config}.{args.worker}.weights.safetensors"))
    zero = sum(int((w == 0).sum()) for w in weights.values()) / sum(w.numel() for w in weights.values())
    print(json.dumps({"config": args.config, "tool": args.worker, "seconds": seconds, "peak_mib": peak_mib,
                      "zero_share": zero}))


def evaluate_weights(args, config: str, tool: str) -> float:
    """Perplexity of the base with one tool's compressed decoder-layer weights, in THIS environment:
    both tools' models are evaluated by the same code and library versions (llm-compressor's venv
    pins an older transformers, and its own evaluation of the same weights differed)."""
    from safetensors.torch import load_file

    from forgetless.metrics.perplexity import perplexity

    model, tokenizer = load(args.model)
    weights = load_file(str(Path(args.out) / f"{config}.{tool}.weights.safetensors"))
    for i, layer in enumerate(model.model.layers):
        for name, m in layer.named_modules():
            if f"{i}.{name}" in weights:
                m.weight.data.copy_(weights[f"{i}.{name}"])
    heldout = texts(Path(args.data_dir), args.seed)[1][: args.eval_docs]
    return perplexity(model, tokenizer, heldout, max_length=args.seq_len)["perplexity"]


def agreement(out: Path, config: str) -> dict | None:
    """Pruning: the share of weights kept / pruned alike. Quantization: the share of weights with the
    same dequantized value (to 1e-6 relative) and ‖W_forgetless − W_llmc‖ / ‖W_llmc‖."""
    from safetensors.torch import load_file

    a, b = (out / f"{config}.{tool}.weights.safetensors" for tool in ("forgetless", "llmcompressor"))
    if not (a.exists() and b.exists()):
        return None
    ma, mb = load_file(str(a)), load_file(str(b))
    total = sum(ma[k].numel() for k in ma)
    if CONFIGS[config][0] == "gptq":
        same = sum(int(((ma[k] - mb[k]).abs() <= 1e-6 * mb[k].abs().clamp_min(1e-6)).sum()) for k in ma)
        diff = sum(float(((ma[k] - mb[k]) ** 2).sum()) for k in ma) ** 0.5
        return {"same_value": same / total, "relative_difference": diff / sum(float((mb[k] ** 2).sum()) for k in mb) ** 0.5}
    return {"mask_agreement": sum(int(((ma[k] == 0) == (mb[k] == 0)).sum()) for k in ma) / total}


def baseline_perplexity(args) -> float:
    from forgetless.metrics.perplexity import perplexity

    model, tokenizer = load(args.model)
    return perplexity(model, tokenizer, texts(Path(args.data_dir), args.seed)[1][: args.eval_docs], max_length=args.seq_len)["perplexity"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True, help="a safetensors model folder (e.g. the converted SmolLM2)")
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--llmc-python", default="", help="python of a venv with llmcompressor (empty: forgetless only)")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--calibration", type=int, default=64)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--eval-docs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/.oneshot")
    parser.add_argument("--worker", choices=["forgetless", "llmcompressor"], help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    if args.worker:
        return worker(args)
    rows = []
    print(f"base perplexity: {baseline_perplexity(args):.3f}", flush=True)
    for config in args.configs.split(","):
        for tool, python in (("forgetless", sys.executable), ("llmcompressor", args.llmc_python)):
            if not python or (tool == "llmcompressor" and CONFIGS[config][0] in ("magnitude", "rtn")):
                continue
            cmd = [python, __file__, "--worker", tool, "--config", config] + [
                f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
                if k in ("model", "data_dir", "calibration", "seq_len", "eval_docs", "threads", "seed", "out")]
            env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
            done = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if done.returncode:
                print(f"{config} / {tool} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])
            row["load"] = os.getloadavg()[0]
            row["perplexity"] = evaluate_weights(args, config, tool)
            rows.append(row)
            print(json.dumps(row), flush=True)
        agree = agreement(Path(args.out), config)
        if agree is not None:
            print(json.dumps({"config": config, **agree}), flush=True)


if __name__ == "__main__":
    main()
