"""forgetless's one-shot methods (Wanda, SparseGPT, GPTQ) against llm-compressor's modifiers on the
same model, the same calibration sequences and the same held-out text; compression time side by
side, alternating the two tools, with the load average recorded *during* every run.

Protocol:
- Every compression runs in a fresh process (``--worker``) that loads the model, tokenizes the
  calibration sequences and imports the tool before the clock starts; **only the compression step
  is timed**: forgetless's ``OneShotMethod.calibrate(model, batches)`` (the registered method, as
  ``forgetless compress`` runs it) and llm-compressor's ``oneshot(model=..., dataset=..., recipe=...)``.
  The step's CPU time (user + system) and the process's peak resident memory are recorded too.
- ``--pairs`` pairs per config; the tools alternate inside each pair and the order flips from one
  pair to the next (forgetless first, then llm-compressor first, ...), so drift in the machine's
  load hits both alike. A thread samples ``/proc/loadavg`` every second while a worker runs: the
  1-minute load and the number of runnable threads (``procs_running``) during the run are kept.
- Both tools run with the same torch thread count (``--threads``) and the same calibration: the
  first ``--calibration`` XSum documents of a seeded half of the sample with at least ``--seq-len``
  tokens, cut to exactly ``--seq-len`` tokens (no padding). Each tool batches them its own way
  (forgetless: ``calibration_batch`` of the method config; llm-compressor: ``--llmc-batch``, its
  default 1).
- The compressed decoder-layer weights come back as safetensors and are scored here, by the same
  code and library versions (``forgetless.metrics.perplexity``: the first ``--eval-docs`` documents of the
  other half joined by blank lines, in non-overlapping windows of ``--eval-len`` tokens). Every run's
  weights are hashed: repeats of one tool
  must give the same weights (printed when they do not).

llm-compressor 0.14 pins transformers ≤ 5.17, so it runs from its own virtual environment::

    python benchmarks/oneshot_vs_llmcompressor.py --llmc-python /work/venvs/llmc/bin/python \\
        --data-dir ../shared/data --configs wanda-2:4,sparsegpt-2:4,gptq-w4g64-static

Issue 39's schemes (``--configs w8a8-int8-smoothquant,fp8-dynamic,awq-w4g64``): each tool's compression as its
examples run it (SmoothQuant α 0.8 then GPTQ W8A8; FP8_DYNAMIC rounded to nearest; AWQ then 4-bit asymmetric
groups of 64); every decoder-layer tensor comes back (SmoothQuant and AWQ change the norms), llm-compressor's
linears fake-quantized with their scales, and both are scored with the same per-token input quantization
(``INPUTS``).

``--model`` defaults to the converted SmolLM2 folder (``--model smollm2``'s cache); ``--layers N``
keeps the first N decoder layers (a quick look, not a result). The table (markdown) and every run
(JSON lines) are written to ``--out``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = {  # name → (method, forgetless options, llm-compressor options)
    "wanda-50": ("wanda", {"sparsity": 0.5}, {"sparsity": 0.5, "mask_structure": "0:0"}),
    "wanda-2:4": ("wanda", {"pattern": "2:4"}, {"sparsity": 0.5, "mask_structure": "2:4"}),
    "sparsegpt-50": ("sparsegpt", {"sparsity": 0.5}, {"sparsity": 0.5, "mask_structure": "0:0"}),
    "sparsegpt-2:4": ("sparsegpt", {"pattern": "2:4"}, {"sparsity": 0.5, "mask_structure": "2:4"}),
    # GPTQ 4-bit, asymmetric, group 64 (divides 576 and 1536; llm-compressor refuses 128 on 576-wide
    # layers), natural column order; llm-compressor fixes every grid from the original weights first
    "gptq-w4g64-static": ("gptq", {"bits": 4, "group_size": 64, "static_groups": True, "asymmetric": True}, {"group_size": 64}),
    "gptq-w4g64-dynamic": ("gptq", {"bits": 4, "group_size": 64, "asymmetric": True}, {"group_size": 64}),
    # issue 39's schemes (the presets of forgetless/schemes.py, llm-compressor's as its examples run them):
    # SmoothQuant α 0.8 then GPTQ int8 per row + int8 inputs per token (llm-compressor's GPTQ without act-order);
    # FP8_DYNAMIC rounded to nearest (no calibration); AWQ + 4-bit asymmetric groups of 64 (576-wide layers)
    "w8a8-int8-smoothquant": ([("smoothquant", {"alpha": 0.8}),
                               ("gptq", {"bits": 8, "group_size": -1, "activations": "int8-token"})], {}, {}),
    "fp8-dynamic": ([("rtn", {"bits": 8, "group_size": -1, "weight_type": "fp8", "activations": "fp8-token"})],
                    {}, {}),
    "awq-w4g64": ([("awq", {"bits": 4, "group_size": 64, "asymmetric": True})], {}, {"group_size": 64}),
}
INPUTS = {"w8a8-int8-smoothquant": "int8-token", "fp8-dynamic": "fp8-token"}  # inputs quantized when scored
TOOLS = ("forgetless", "llmcompressor")


# ----- calibration and held-out text (both tools, both environments) --------------------------------
def documents(data_dir: Path, seed: int) -> tuple[list[str], list[str]]:
    rows = [json.loads(line)["document"] for line in (data_dir / "xsum" / "test_1000_llm_decoding.jsonl").open()]
    random.Random(seed).shuffle(rows)
    return rows[: len(rows) // 2], rows[len(rows) // 2:]


def calibration_ids(tokenizer, docs: list[str], count: int, length: int) -> list[list[int]]:
    """``count`` sequences of exactly ``length`` tokens, no padding (each from one document)."""
    out = [ids[:length] for ids in tokenizer(docs, add_special_tokens=False)["input_ids"] if len(ids) >= length]
    if len(out) < count:
        raise SystemExit(f"only {len(out)} calibration documents have {length} tokens")
    return out[:count]


def load(model_dir: str, layers: int):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(model_dir, use_safetensors=True, trust_remote_code=False,
                                                 dtype=torch.float32).eval()
    if layers:
        model.model.layers = model.model.layers[:layers]
        model.config.num_hidden_layers = layers
    return model, AutoTokenizer.from_pretrained(model_dir, trust_remote_code=False)


# ----- workers: one compression per process, only the compression step timed ----------------------------
def forgetless_step(model, ids: list[list[int]], method, options: dict, batch: int = 0):
    """The compression step: ``calibrate`` of a one-shot method, or each method of a stack in turn
    (``method``: a list of (name, options); ``rtn`` calibrates nothing: its ``finalize`` rounds)."""
    import torch

    from forgetless.registry import METHODS

    stack = method if isinstance(method, list) else [(method, options)]
    compressors = [METHODS.build(METHODS.make_config(name, {**opts, **({"calibration_batch": batch}
                                                                       if batch and name != "rtn" else {})}))
                   for name, opts in stack]
    size = next((c.config.calibration_batch for c in compressors if hasattr(c.config, "calibration_batch")), 8)
    batches = [{"input_ids": torch.tensor(ids[i:i + size]), "attention_mask": torch.ones(len(ids[i:i + size]),
                                                                                         len(ids[0]), dtype=torch.long)}
               for i in range(0, len(ids), size)]

    def step():
        for compressor in compressors:
            compressor.finalize(model, None) if compressor.config.name == "rtn" else compressor.calibrate(model, batches)
    return step, {"batch": size}


def llmc_recipe(config: str, options: dict) -> list:
    """llm-compressor's modifiers for issue 39's schemes (its examples: SmoothQuant + GPTQ W8A8, FP8_DYNAMIC
    rounded to nearest, AWQ + QuantizationModifier W4 asymmetric)."""
    from llmcompressor.modifiers.gptq import GPTQModifier
    from llmcompressor.modifiers.quantization import QuantizationModifier
    from llmcompressor.modifiers.transform.awq import AWQModifier
    from llmcompressor.modifiers.transform.smoothquant import SmoothQuantModifier
    from llmcompressor.pipelines.cache import IntermediatesCache

    # llm-compressor 0.14's AWQ pins cached activations for a GPU copy, which raises without an accelerator
    IntermediatesCache.pin_memory = lambda self, batch_index, input_names=None: None
    targets, ignore = ["Linear"], ["lm_head"]
    if config == "w8a8-int8-smoothquant":
        return [SmoothQuantModifier(smoothing_strength=0.8),
                GPTQModifier(targets=targets, scheme="W8A8", ignore=ignore, actorder=None)]
    if config == "fp8-dynamic":
        return [QuantizationModifier(targets=targets, scheme="FP8_DYNAMIC", ignore=ignore)]
    weights = {"num_bits": 4, "type": "int", "symmetric": False, "strategy": "group", "group_size": options["group_size"]}
    return [AWQModifier(), QuantizationModifier(config_groups={"group_0": {"targets": targets, "weights": weights}},
                                                ignore=ignore)]


def llmc_step(model, ids: list[list[int]], method, options: dict, batch: int, config: str = ""):
    from datasets import Dataset
    from llmcompressor import oneshot
    from llmcompressor.modifiers.gptq import GPTQModifier
    from llmcompressor.modifiers.pruning import WandaPruningModifier
    from llmcompressor.modifiers.obcq import SparseGPTModifier

    targets, ignore = ["Linear"], ["lm_head"]
    if isinstance(method, list):
        modifier = llmc_recipe(config, options)
    elif method == "wanda":
        modifier = WandaPruningModifier(targets=targets, ignore=ignore, **options)
    elif method == "sparsegpt":
        modifier = SparseGPTModifier(targets=targets, ignore=ignore, **options)
    else:
        weights = {"num_bits": 4, "type": "int", "symmetric": False, "strategy": "group",
                   "group_size": options["group_size"]}
        modifier = GPTQModifier(config_groups={"group_0": {"targets": targets, "weights": weights}}, ignore=ignore,
                                actorder=None)
    dataset = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(r) for r in ids]})
    recipe = modifier if isinstance(modifier, list) else [modifier]
    return lambda: oneshot(model=model, dataset=dataset, recipe=recipe, num_calibration_samples=len(ids),
                           max_seq_length=len(ids[0]), shuffle_calibration_samples=False, batch_size=batch), \
        {"batch": batch}


def layer_weights(model) -> dict:
    """Every weight and bias of the decoder layers (norms too: SmoothQuant and AWQ fold scales into them), the
    linears as they compute: llm-compressor's weights fake-quantized with their stored scales (its
    round-to-nearest keeps them unrounded until saved; GPTQ's are on the grid already)."""
    import torch

    out = {}
    for i, layer in enumerate(model.model.layers):
        for name, m in layer.named_modules():
            for key in ("weight", "bias"):
                tensor = getattr(m, key, None)
                if isinstance(tensor, torch.Tensor):
                    out[f"{i}.{name}.{key}".replace("..", ".")] = rounded(m, key, tensor).detach().float().contiguous()
    return out


def rounded(module, key: str, tensor):
    scheme = getattr(module, "quantization_scheme", None)
    if key != "weight" or scheme is None or scheme.weights is None or not hasattr(module, "weight_scale"):
        return tensor
    from compressed_tensors.quantization.lifecycle.forward import fake_quantize

    return fake_quantize(tensor, module.weight_scale, getattr(module, "weight_zero_point", None), scheme.weights)


def peak_rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):  # this process image's high-water mark (not the parent's)
            return int(line.split()[1]) / 1024
    return float("nan")


def worker(args) -> None:
    """One compression in this process; prints one JSON line."""
    import torch
    from safetensors.torch import save_file

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    method, ours, theirs = CONFIGS[args.config]
    model, tokenizer = load(args.model, args.layers)
    ids = calibration_ids(tokenizer, documents(Path(args.data_dir), args.seed)[0], args.calibration, args.seq_len)
    if args.worker == "forgetless":
        step, settings = forgetless_step(model, ids, method, ours, args.batch)
    else:
        step, settings = llmc_step(model, ids, method, theirs, args.llmc_batch, args.config)
    cpu = os.times()
    start = time.perf_counter()
    step()
    seconds = time.perf_counter() - start
    after = os.times()
    weights = layer_weights(model)
    digest = hashlib.sha256(b"".join(weights[k].numpy().tobytes() for k in sorted(weights))).hexdigest()[:16]
    save_file(weights, str(Path(args.out) / f"{args.config}.{args.worker}.weights.safetensors"))
    zero = sum(int((w == 0).sum()) for w in weights.values()) / sum(w.numel() for w in weights.values())
    print(json.dumps({"config": args.config, "tool": args.worker, "seconds": seconds,
                      "cpu_seconds": (after.user - cpu.user) + (after.system - cpu.system),
                      "peak_rss_mib": peak_rss_mib(), "zero_share": zero, "weights_sha256": digest,
                      "threads": torch.get_num_threads(), **settings}))


# ----- scoring, in this environment ----------------------------------------------------------------------
def score(args) -> None:
    """Perplexity of the base and of every saved model, and agreement between the tools; one JSON line each."""
    import torch
    from safetensors.torch import load_file

    from forgetless.metrics.perplexity import perplexity

    torch.set_num_threads(args.threads)
    model, tokenizer = load(args.model, args.layers)
    base = {k: v.clone() for k, v in model.state_dict().items()}
    heldout = "\n\n".join(documents(Path(args.data_dir), args.seed)[1][: args.eval_docs])  # one text, windows
    print(json.dumps({"config": "base", "perplexity": perplexity(model, tokenizer, heldout,
                                                                 window=args.eval_len)["perplexity"]}), flush=True)
    for config in args.configs.split(","):
        found = {tool: Path(args.out) / f"{config}.{tool}.weights.safetensors" for tool in TOOLS}
        for tool, path in found.items():
            if not path.exists():
                continue
            model.load_state_dict(base)
            load_layer_weights(model, load_file(str(path)), INPUTS.get(config))
            ppl = perplexity(model, tokenizer, heldout, window=args.eval_len)["perplexity"]
            load_layer_weights(model, {}, None)
            print(json.dumps({"config": config, "tool": tool, "perplexity": ppl}), flush=True)
        if all(p.exists() for p in found.values()):
            print(json.dumps({"config": config, **agreement(*(load_file(str(p)) for p in found.values()), config)}),
                  flush=True)


def load_layer_weights(model, weights: dict, inputs: str | None) -> None:
    """The saved layer tensors (``layer_weights``; older runs: ``{i}.{linear}`` weights only) into the model,
    every linear's inputs quantized as ``inputs`` says (the same per-token quantize-dequantize for both tools,
    ``quantization/inputs.py``, as transformers + compressed-tensors run it on CPU); ``inputs`` None: off."""
    import torch

    from forgetless.quantization.inputs import InputQuant, quantize_inputs

    for i, layer in enumerate(model.model.layers):
        for name, m in layer.named_modules():
            for key in ("weight", "bias"):
                saved = weights.get(f"{i}.{name}.{key}".replace("..", ".")) if name else weights.get(f"{i}.{key}")
                saved = weights.get(f"{i}.{name}") if saved is None and key == "weight" else saved
                if saved is not None:
                    getattr(m, key).data.copy_(saved)
            if isinstance(m, torch.nn.Linear):
                quantize_inputs(m, InputQuant.named(inputs) if inputs else None)


def agreement(ours: dict, theirs: dict, config: str) -> dict:
    """Pruning: the share of weights pruned / kept alike. GPTQ: the share of weights with the same
    value (to 1e-6 relative) and ‖W_forgetless − W_llmc‖ / ‖W_llmc‖."""
    total = sum(w.numel() for w in ours.values())
    if CONFIGS[config][0] == "gptq" or isinstance(CONFIGS[config][0], list):
        same = sum(int(((ours[k] - theirs[k]).abs() <= 1e-6 * theirs[k].abs().clamp_min(1e-6)).sum()) for k in ours)
        diff = sum(float(((ours[k] - theirs[k]) ** 2).sum()) for k in ours) ** 0.5
        return {"same_value": same / total,
                "relative_difference": diff / sum(float((theirs[k] ** 2).sum()) for k in theirs) ** 0.5}
    return {"mask_agreement": sum(int(((ours[k] == 0) == (theirs[k] == 0)).sum()) for k in ours) / total}


# ----- the driver: no torch here, so the workers' clocks and memory are their own -------------------------
class LoadSampler(threading.Thread):
    """``/proc/loadavg`` every ``interval`` seconds until stopped: 1-minute load and runnable threads."""

    def __init__(self, interval: float = 1.0):
        super().__init__(daemon=True)
        self.interval, self.samples, self.stopped = interval, [], threading.Event()

    def run(self) -> None:
        while True:
            fields = Path("/proc/loadavg").read_text().split()
            self.samples.append((float(fields[0]), int(fields[3].split("/")[0])))
            if self.stopped.wait(self.interval):
                return

    def summary(self) -> dict:
        loads, running = [s[0] for s in self.samples], [s[1] for s in self.samples]
        return {"load_mean": statistics.fmean(loads), "load_min": min(loads), "load_max": max(loads),
                "running_mean": statistics.fmean(running)}


def passed_on(args) -> list[str]:
    keep = ("model", "data_dir", "calibration", "seq_len", "eval_docs", "eval_len", "threads", "seed", "out", "layers",
            "batch", "llmc_batch", "configs")
    return [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k in keep]


def run_worker(args, config: str, tool: str) -> dict | None:
    python = sys.executable if tool == "forgetless" else args.llmc_python
    cmd = [python, __file__, "--worker", tool, "--config", config, *passed_on(args)]
    sampler = LoadSampler()
    sampler.start()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=args.out,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    sampler.stopped.set()
    sampler.join()
    if done.returncode:
        print(f"{config} / {tool} failed:\n{done.stderr[-3000:]}", file=sys.stderr)
        return None
    return {**json.loads(done.stdout.strip().splitlines()[-1]), **sampler.summary()}


def table(rows: list[dict], scores: dict, agreements: dict) -> str:
    lines = ["| config | tool | seconds per run (pair order) | median | ratio forgetless / llmc per pair | "
             "load during runs (1-min avg, min–max) | CPU s (median) | peak RSS MiB | perplexity (vs llmc) | "
             "agreement |",
             "|---|---|---|---:|---|---|---:|---:|---:|---|"]
    for config in dict.fromkeys(r["config"] for r in rows):
        by_tool = {tool: [r for r in rows if r["config"] == config and r["tool"] == tool] for tool in TOOLS}
        pairs = list(zip(by_tool["forgetless"], by_tool["llmcompressor"]))
        ratios = [f["seconds"] / l["seconds"] for f, l in pairs]
        for tool, runs in by_tool.items():
            if not runs:
                continue
            secs = [r["seconds"] for r in runs]
            loads = f"{statistics.fmean(r['load_mean'] for r in runs):.1f} ({min(r['load_min'] for r in runs):.1f}–" \
                    f"{max(r['load_max'] for r in runs):.1f})"
            ratio = (", ".join(f"{x:.2f}" for x in ratios) + f" (median {statistics.median(ratios):.2f})") \
                if ratios and tool == "forgetless" else ""
            agree = ", ".join(f"{k} {v:.4%}" if k != "relative_difference" else f"{k} {v:.3g}"
                              for k, v in agreements.get(config, {}).items()) if tool == "forgetless" else ""
            ppl, theirs = scores.get((config, tool)), scores.get((config, "llmcompressor"))
            shown = "" if ppl is None else f"{ppl:.3f}" + (
                f" ({ppl / theirs - 1:+.2%})" if theirs and tool == "forgetless" else "")
            lines.append(f"| {config} | {tool} | {', '.join(f'{s:.1f}' for s in secs)} | "
                         f"{statistics.median(secs):.1f} | {ratio} | {loads} | "
                         f"{statistics.median(r['cpu_seconds'] for r in runs):.1f} | "
                         f"{max(r['peak_rss_mib'] for r in runs):.0f} | {shown} | {agree} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="", help="a safetensors model folder (default: the converted SmolLM2)")
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--llmc-python", default="/work/venvs/llmc/bin/python", help="python of llm-compressor's venv")
    parser.add_argument("--configs", default="wanda-2:4,sparsegpt-2:4,gptq-w4g64-static")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--calibration", type=int, default=128, help="calibration sequences")
    parser.add_argument("--seq-len", type=int, default=64, help="tokens per calibration sequence")
    parser.add_argument("--batch", type=int, default=0,
                        help="forgetless's calibration batch size (0: the method's calibration_batch default)")
    parser.add_argument("--llmc-batch", type=int, default=1,
                        help="llm-compressor's calibration batch size (its default 1)")
    parser.add_argument("--eval-docs", type=int, default=40, help="held-out documents scored (0: timing only)")
    parser.add_argument("--eval-len", type=int, default=256, help="perplexity window (tokens)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads of both tools (1: a shared machine)")
    parser.add_argument("--layers", type=int, default=0, help="keep the first N decoder layers (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmarks/.oneshot")
    parser.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--score", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.out = str(Path(args.out).resolve())
    args.data_dir = str(Path(args.data_dir).resolve())
    if not args.model:  # in a child: the driver imports no torch
        args.model = subprocess.run([sys.executable, "-c", "from forgetless.offline_models import offline_folder; "
                                     "print(offline_folder('smollm2'))"], capture_output=True, text=True, check=True,
                                    env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.strip().splitlines()[-1]
    if args.worker:
        return worker(args)
    if args.score:
        return score(args)
    unknown = [c for c in args.configs.split(",") if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown config {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    Path(args.out).mkdir(parents=True, exist_ok=True)
    rows = []
    with open(Path(args.out) / "runs.jsonl", "a") as log:
        for config in args.configs.split(","):
            for pair in range(args.pairs):
                for tool in (TOOLS if pair % 2 == 0 else TOOLS[::-1]):
                    row = run_worker(args, config, tool)
                    if row is not None:
                        rows.append({**row, "pair": pair})
                        log.write(json.dumps(rows[-1]) + "\n")
                        log.flush()
                        print(json.dumps(rows[-1]), flush=True)
    for config in args.configs.split(","):
        for tool in TOOLS:
            digests = {r["weights_sha256"] for r in rows if r["config"] == config and r["tool"] == tool}
            if len(digests) > 1:
                print(f"warning: {config} / {tool}: the repeats gave different weights ({len(digests)} digests)")
    if args.eval_docs == 0:  # timing only
        print(table(rows, {}, {}))
        return
    scored = subprocess.run([sys.executable, __file__, "--score", *passed_on(args)], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    if scored.returncode:
        raise SystemExit(f"scoring failed:\n{scored.stderr[-3000:]}")
    lines = [json.loads(line) for line in scored.stdout.splitlines() if line.startswith("{")]
    scores = {(r["config"], r.get("tool")): r["perplexity"] for r in lines if "perplexity" in r}
    agreements = {r["config"]: {k: v for k, v in r.items() if k != "config"} for r in lines if "perplexity" not in r}
    text = f"base perplexity {scores[('base', None)]:.3f}\n\n" + table(rows, scores, agreements)
    (Path(args.out) / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
