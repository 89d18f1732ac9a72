"""What post-training compression makes a real LLM forget, scored on GLUE-style prompts zero-shot:
SmolLM2-135M-Instruct at CPU scale (the first findings; the base is at chance on most of these sets,
so ``benchmarks/smollm2_findings.py`` measures the LLM zero-shot suite instead).

The base is ``--model smollm2`` (or another offline LLM: ``--model qwen2.5-coder-1.5b``) as it is (the Q4_1 GGUF dequantized to fp32; no fine-tuning). Each
variant compresses it without recovery training (``--recovery none``): ShortGPT Block Influence
removal of 3 / 6 / 9 of the 30 layers (Men et al. 2024; calibration on the task's training split),
magnitude pruning to 50% unstructured sparsity in one shot, int8 dynamic quantization and bf16,
Wanda and SparseGPT at 50% unstructured and 2:4, 50% of the key/value groups removed by Michel
importance of the label word's loss (``heads``) and GPTQ 4-bit with groups of 128.
Every model is scored zero-shot (``metrics/zero_shot.py``: chat template, the task's prompt,
content-free calibration) on sst2 → AdvGLUE-sst2, mnli-small → HANS (hard / easy from the MNLI
hardness file) and qqp → PAWS-QQP + PAWS-Wiki + AdvGLUE-qqp: accuracy with 95% bootstrap intervals,
F_bias (Du et al. 2023, eq. 1-2) with its paired bootstrap interval (marked † where the base itself is at
chance on the challenge sets), the paired changes compressed − base on dev, the pooled challenge and each
challenge set, flips with McNemar's p, the change on dev's hard and easy thirds, and, once per variant,
held-out perplexity on XSum documents (joined, windows of the model's context capped at 2048:
``metrics/perplexity.py``; results written before issue 29 used 128-token windows per text) and
prefill / decode speed against the base.

The base is evaluated once per task and each variant once per task (one result file each under
``--out``, so an interrupted run resumes); ``--table`` only renders ``results.md``. Usage:

    python benchmarks/smollm2_glue_findings.py --data-dir ../shared/data --eval-size 200 --out runs/smollm2-findings
    nice -n 10 python benchmarks/smollm2_glue_findings.py --model qwen2.5-coder-1.5b --data-dir ../shared/data \
        --eval-size 200 --tasks sst2 --variants --out runs/qwen-findings     # the base alone (no variant)
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from forgetless.data.tasks import load_task
from forgetless.config import EvalConfig
from forgetless.data.texts import read_texts
from forgetless.metrics.paired import flips, paired_intervals
from forgetless.metrics.perplexity import default_perplexity_file, default_window, join, perplexity
from forgetless.metrics.size import parameter_counts
from forgetless.metrics.speed import SpeedConfig
from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.kinds import KINDS
from forgetless.methods.base import CompressionContext
from forgetless.registry import METHODS
from forgetless.report import headline, honest
from forgetless.report.card import bias_section
from forgetless.training.trainer import TrainConfig

VARIANTS = {
    "shortgpt-3": ("block-influence", {"remove": 3, "recovery": "none", "calibration_examples": 64}),
    "shortgpt-6": ("block-influence", {"remove": 6, "recovery": "none", "calibration_examples": 64}),
    "shortgpt-9": ("block-influence", {"remove": 9, "recovery": "none", "calibration_examples": 64}),
    "magnitude-50": ("magnitude", {"sparsity": 0.5, "recovery": "none"}),
    "int8": ("quantize", {"dtype": "int8"}),
    "bf16": ("quantize", {"dtype": "bf16"}),
    "wanda-50": ("wanda", {"sparsity": 0.5}),
    "sparsegpt-50": ("sparsegpt", {"sparsity": 0.5}),
    "wanda-2:4": ("wanda", {"sparsity": 0.5, "pattern": "2:4"}),
    "sparsegpt-2:4": ("sparsegpt", {"sparsity": 0.5, "pattern": "2:4"}),
    "heads-kv-50": ("heads", {"ratio": 0.5, "recovery": "none", "scoring_examples": 64}),
    "gptq-w4g128": ("gptq", {"bits": 4, "group_size": 128}),
    # the deployable schemes (``forgetless.schemes.SCHEMES``): W8A8-INT8 is a stack, applied in order
    "w8a8-int8": [("smoothquant", {"alpha": 0.8}),
                  ("gptq", {"bits": 8, "group_size": -1, "activations": "int8-token"})],
    "fp8": ("gptq", {"bits": 8, "group_size": 0, "weight_type": "fp8", "activations": "fp8-tensor"}),
}
TASKS = ("sst2", "mnli-small", "qqp")
# Zeros in dense weights (unstructured, 2:4) and GPTQ's weights (dequantized to fp32 on load) run the
# same dense kernels on a CPU: their speedup is 1 by construction, so only these methods are timed.
TIMED_METHODS = ("block-influence", "heads", "truncate", "quantize")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def evaluate(model, tokenizer, task, args) -> dict:
    result = KINDS["causal-lm"].evaluate(model, tokenizer, task, EvalConfig(batch_size=args.batch_size),
                                         args.max_length)
    result.pop("zero_shot")
    return result


def compare(task, base: dict, compressed: dict, seed: int) -> dict:
    predictions = {"base": base["predictions"], "compressed": compressed["predictions"]}
    results = {"base": base, "compressed": compressed}
    intervals = dataclasses.asdict(honest.intervals_section(task, predictions, seed))
    return {"sets": {name: {role: results[role]["sets"][name]["accuracy"] for role in results}
                     for name in base["sets"]},
            "predicted_share": {name: {role: results[role]["sets"][name].get("predicted_share") for role in results}
                                for name in base["sets"]},
            **paired_changes(task, predictions, seed),
            "challenge_pooled": {role: results[role]["challenge_pooled"] for role in results},
            "bias": bias_section(results), "intervals": intervals,
            "hard_easy": {role: {k: results[role]["sets"]["dev"][k]["accuracy"] for k in ("hard", "easy")}
                          for role in results} if "hard" in base["sets"]["dev"] else None}


def paired_changes(task, predictions: dict, seed: int) -> dict:
    """Flips per evaluation set and pooled challenge (correct → wrong, wrong → correct, exact McNemar p) and the
    paired change compressed − base on dev's hard and easy thirds (the first paper's variance-based difficulty):
    whether compression costs more where the base is shakier."""
    correct = honest.correctness(task, predictions)
    pooled = [name for name in task.pooled if name in correct["base"]]
    joined = {role: np.concatenate([correct[role][name] for name in pooled]) for role in honest.ROLES} if pooled else None
    out = {"flips": {name: flips(correct["base"][name], correct["compressed"][name]) for name in correct["base"]},
           "hard_easy_delta": None}
    out["flips"]["challenge_pooled"] = flips(joined["base"], joined["compressed"]) if joined else None
    if task.dev.hard is not None:
        hard = np.asarray(task.dev.hard, dtype=bool)
        out["hard_easy_delta"] = {part: paired_intervals(correct["base"]["dev"][mask], correct["compressed"]["dev"][mask],
                                                         seed=seed)["delta"]
                                  for part, mask in (("hard", hard), ("easy", ~hard))}
    return out


def base_perplexity(model, tokenizer, texts, args) -> float:
    """The base's perplexity, computed once per ``--out`` (it does not change between variants)."""
    path = Path(args.out) / f"base-perplexity-{len(texts)}.json"
    if not path.exists():
        atomic_write_json(path, {"perplexity": perplexity(model, tokenizer, join(texts), default_window(model))["perplexity"]})
    return json.loads(path.read_text())["perplexity"]


def run(args) -> None:
    kind, out = KINDS["causal-lm"], Path(args.out)
    texts = read_texts(default_perplexity_file(args.data_dir), args.perplexity_texts)
    for task_name in args.tasks:
        task = load_task(task_name, data_dir=args.data_dir, seed=args.seed, train_size=512, eval_size=args.eval_size)
        base_model, tokenizer = kind.load_model(args.model, task, args.seed)
        base_file = out / task_name / "base.json"
        if base_file.exists():
            base = json.loads(base_file.read_text())
        else:
            log(f"{task_name}: base")
            started = time.perf_counter()
            base = evaluate(base_model, tokenizer, task, args)
            base["timing"] = {"seconds": time.perf_counter() - started, "load_average": os.getloadavg()}
            atomic_write_json(base_file, base)
        for name in args.variants:
            path = out / task_name / f"{name}.json"
            if path.exists():
                continue
            stack = VARIANTS[name] if isinstance(VARIANTS[name], list) else [VARIANTS[name]]
            log(f"{task_name}: {name}")
            ctx = CompressionContext(task=task, tokenizer=tokenizer, teacher=base_model, work_dir=out / "work" / task_name / name,
                                     train_config=TrainConfig(max_length=args.max_length, progress=False), kind=kind,
                                     seed=args.seed, base_model=args.model)
            started = time.perf_counter()
            model = copy.deepcopy(base_model)
            for method, options in stack:
                model = METHODS.get(method)(METHODS.make_config(method, options)).compress(model, ctx).eval()
            applied = time.perf_counter()
            compressed = evaluate(model, tokenizer, task, args)
            result = {"variant": name, "method": "+".join(m for m, _ in stack), "options": [o for _, o in stack],
                      "notes": ctx.notes, **compare(task, base, compressed, args.seed),
                      "predictions": compressed["predictions"],  # per item, as the base's: read for any later breakdown
                      "timing": {"apply_seconds": applied - started, "evaluate_seconds": time.perf_counter() - applied,
                                 "threads": torch.get_num_threads(), "load_average": os.getloadavg()}}
            if task_name == TASKS[0]:  # speed and perplexity do not depend on the task's scoring: measured with sst2
                if method in TIMED_METHODS:
                    speed = kind.speed(base_model, model, SpeedConfig(repeats=args.repeats))
                    result["speed"] = {k: speed[k] for k in ("config", "latency_ms", "throughput_per_s",
                                                             "decode_ms_per_token", "decode_ms_per_token_batch",
                                                             "flop_limit")}
                    result["speed"]["load_average"] = os.getloadavg()
                else:
                    result["speed"] = {"not_timed": "dense kernels: same FLOPs and memory traffic as the base on CPU"}
                result["size"] = {role: parameter_counts(m) for role, m in (("base", base_model), ("compressed", model))}
                result["perplexity"] = {"base": base_perplexity(base_model, tokenizer, texts, args),
                                        "compressed": perplexity(model, tokenizer, join(texts),
                                                                 default_window(model))["perplexity"]}
            atomic_write_json(path, result)
    table(args)


def _kept(r: dict) -> str:
    """Share of the transformer layers' weights kept (and of the prunable weights non-zero)."""
    size = r.get("size")
    if not size:
        return ""
    return (f"{size['compressed']['layers'] / size['base']['layers']:.2f} "
            f"({1 - size['compressed']['prunable_sparsity']:.2f})")


def _times(ratio) -> str:
    return "not measurable" if ratio is None else f"{ratio:.2f}×"


def _ci(interval) -> str:
    return f"{100 * interval['accuracy']:.1f} [{100 * interval['low']:.1f}, {100 * interval['high']:.1f}]"


def base_only_row(task_name: str, base: dict, args) -> str:
    """The row of a task scored for the base alone (no variant yet): its dev and pooled challenge accuracy with
    the same bootstrap intervals the variants' rows carry, and hard / easy."""
    task = load_task(task_name, data_dir=args.data_dir, seed=args.seed, train_size=512, eval_size=args.eval_size)
    predictions = {"base": base["predictions"], "compressed": base["predictions"]}
    iv = dataclasses.asdict(honest.intervals_section(task, predictions, args.seed))
    hard_easy = (" / ".join(f"{100 * iv['hard_easy']['base'][k]['accuracy']:.1f}" for k in ("hard", "easy"))
                 if iv["hard_easy"] else "–")
    return (f"| {task_name} | base as-is | {_ci(iv['sets']['dev']['base'])} | {_ci(iv['challenge']['base'])} | – | "
            f"{hard_easy} |")


def _points(delta: dict | None) -> str:
    """A paired change in points with its interval (``-2.5 [-5.0, +0.0]``)."""
    return headline.estimate_text(delta, 100, "+.1f")


def _flips(f: dict | None) -> str:
    return "–" if not f else f"{f['correct_to_wrong']} / {f['wrong_to_correct']} ({headline.p_text(f['mcnemar_p'])})"


def change_row(task_name: str, r: dict) -> str:
    """The paired changes of one variant: dev and pooled challenge (compressed − base, the same items), flips, and
    the change on dev's hard and easy thirds."""
    delta = r["intervals"]["delta"]
    he = r.get("hard_easy_delta")
    per_set = "; ".join(f"{name} {_points(change)}" for name, change in delta["sets"].items() if name != "dev")
    return (f"| {task_name} | {r['variant']} | {_points(delta['sets']['dev'])} | {_points(delta['challenge'])} | "
            f"{_flips(r['flips']['dev'])} | {_flips(r['flips']['challenge_pooled'])} | "
            + (f"{_points(he['hard'])} / {_points(he['easy'])}" if he else "–") + f" | {per_set} |")


def challenge_labels(base: dict) -> int:
    """How many labels the pooled challenge sets have (HANS, PAWS, AdvGLUE, FEVER-Symmetric: two)."""
    return len(base["sets"][base["pooled_sets"][0]]["predicted_share"])


def base_at_chance(interval: dict, labels: int) -> str:
    """``†`` when the base's pooled challenge interval holds chance (1 / the number of labels): a challenge set the
    base itself fails, so the variant's F_bias there means nothing."""
    return "†" if interval["low"] <= 1 / labels <= interval["high"] else ""


def table(args) -> None:
    out = Path(args.out)
    lines = ["| task | variant | dev % [95% CI] | challenge % [95% CI] | F_bias [95% CI] | hard / easy % |",
             "|---|---|---:|---:|---:|---:|"]
    speed_lines = ["| variant | layer weights kept (non-zero) | perplexity (XSum) | prefill speedup (b1) | decode speedup (b1) | "
                   "FLOP limit | load avg (1, 5, 15 min) |", "|---|---:|---:|---:|---:|---:|---|"]
    change_lines = ["| task | variant | Δ dev pts [95% CI] | Δ challenge pts [95% CI] | dev flips c→w / w→c (p) | "
                    "challenge flips c→w / w→c (p) | Δ hard / Δ easy pts | Δ per challenge set pts |",
                    "|---|---|---:|---:|---:|---:|---:|---|"]
    for task_name in args.tasks:
        files = sorted((out / task_name).glob("*.json"), key=lambda p: list(VARIANTS).index(p.stem) if p.stem in VARIANTS else -1)
        for path in files:
            r = json.loads(path.read_text())
            if path.stem == "base":
                base = r
                if len(files) == 1:
                    lines.append(base_only_row(task_name, r, args))
                continue
            iv = r["intervals"]
            if not lines[-1].startswith(f"| {task_name} |"):
                lines.append(f"| {task_name} | base as-is | {_ci(iv['sets']['dev']['base'])} | {_ci(iv['challenge']['base'])} "
                             "| – | " + (" / ".join(f"{100 * r['hard_easy']['base'][k]:.1f}" for k in ("hard", "easy"))
                                        if r["hard_easy"] else "–") + " |")
            fb = iv.get("f_bias") or {}
            if (r["bias"].get("gap_base") or 0) <= 0:
                fb_text = "not meaningful (the base's gap ≤ 0)"
            elif r["bias"].get("f_bias") is None:
                fb_text = "undefined"
            else:
                bound = lambda key: headline.num(fb.get(key), ".3f")  # noqa: E731  ("–" without an interval)
                fb_text = f"{r['bias']['f_bias']:.3f} [{bound('low')}, {bound('high')}]"
            fb_text += base_at_chance(iv["challenge"]["base"], challenge_labels(base))
            lines.append(f"| {task_name} | {r['variant']} | {_ci(iv['sets']['dev']['compressed'])} | "
                         f"{_ci(iv['challenge']['compressed'])} | {fb_text} | "
                         + (" / ".join(f"{100 * r['hard_easy']['compressed'][k]:.1f}" for k in ("hard", "easy"))
                            if r["hard_easy"] else "–") + " |")
            if "flips" in r:
                change_lines.append(change_row(task_name, r))
            if "speed" in r:
                s = r["speed"]
                if "not_timed" in s:
                    speed_lines.append(f"| {r['variant']} | {_kept(r)} | {r['perplexity']['base']:.2f} → "
                                       f"{r['perplexity']['compressed']:.2f} | not timed ({s['not_timed']}) | | | |")
                    continue
                flop = s["flop_limit"].get("ratio")
                speed_lines.append(f"| {r['variant']} | {_kept(r)} | {r['perplexity']['base']:.2f} → {r['perplexity']['compressed']:.2f} | "
                                   f"{s['latency_ms']['speedup']:.2f}× | {_times(s['decode_ms_per_token']['speedup'])} | "
                                   + (f"{flop:.2f}×" if flop else "–") + " | "
                                   + ", ".join(f"{x:.1f}" for x in s.get("load_average", [])) + " |")
    if any("†" in line for line in lines):
        lines.append("\n† the base's pooled challenge accuracy is at chance (its interval holds 1 / the labels): the "
                     "base fails that set already, so F_bias there says nothing about what compression cost.")
    text = "\n".join(lines + [""] + (change_lines + [""] if len(change_lines) > 2 else []) + speed_lines)
    atomic_write_text(out / "results.md", text + "\n")
    print(text)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--out", default="runs/smollm2-findings")
    parser.add_argument("--eval-size", type=int, default=200)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument("--model", default="smollm2", help="the offline LLM to start from")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--max-length", type=int, default=160)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--perplexity-texts", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table", action="store_true", help="only render results.md from the result files")
    args = parser.parse_args()
    table(args) if args.table else run(args)
