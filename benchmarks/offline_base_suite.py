"""Benchmark: the base of an offline LLM (``--model gemma3-270m`` or ``smollm2``: ``forgetless/offline_models.py``)
on the offline LLM suite (``--task llm-zero-shot``: ARC-Easy, ARC-Challenge, HellaSwag, PIQA, WinoGrande,
OpenBookQA, lm-eval's wikitext and WikiText-2 perplexity in windows of 2048 tokens), evaluated exactly as a
``forgetless compress --base as-is`` run evaluates its base (``kinds/causal_lm.CausalLMKind.evaluate``:
lm-evaluation-harness on the same seeded items), with each task's 95% percentile-bootstrap interval, wall
time, CPU time, peak memory (``ru_maxrss``) and the load average before and after.

The converted folder is loaded with plain transformers (safetensors), so this runs for a family forgetless
has no structural adapter for yet (Gemma 3's ``gemma3_text``: ``forgetless evaluate gemma3-270m`` refuses it
until issue 38's generic decoders land). Memory: lm-eval scores a batch as ``batch × tokens × vocab`` fp32
logits plus their log-softmax; Gemma 3's vocabulary of 262,144 makes that 2.1 GB per 2,048-token window,
so keep ``--eval-batch-size`` small (8: one perplexity window at a time).

    nice -n 5 python benchmarks/offline_base_suite.py --model gemma3-270m --data-dir ../shared/data \\
        --eval-size 200 --eval-batch-size 8 --json runs/gemma3-270m-base.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="an offline LLM's name or a converted folder")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--eval-size", type=int, default=200)
    parser.add_argument("--eval-batch-size", type=int, default=8)
    parser.add_argument("--json", help="write the numbers here")
    args = parser.parse_args()
    import transformers

    from forgetless.config import EvalConfig, TaskConfig
    from forgetless.data.tasks import task_from_config
    from forgetless.fsutil import atomic_write_json
    from forgetless.kinds import KINDS
    from forgetless.models.loading import resolve_model_path
    from forgetless.offline_models import provenance

    load, started, cpu = os.getloadavg(), time.perf_counter(), time.process_time()
    task = task_from_config(TaskConfig(name="llm-zero-shot", data_dir=args.data_dir, eval_size=args.eval_size))
    folder = resolve_model_path(args.model)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    result = KINDS["causal-lm"].evaluate(model, tokenizer, task, EvalConfig(batch_size=args.eval_batch_size), 2048)
    out = {"model": args.model, "folder": folder, "provenance": provenance(folder), "eval_size": args.eval_size,
           "eval_batch_size": args.eval_batch_size, "sets": with_intervals(result), "language_model":
           result.get("language_model"), "reused_from_cache": result["zero_shot"]["cache"]["reused"],
           "wall_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu,
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, "threads": _threads(),
           "loadavg_before": load, "loadavg_after": os.getloadavg()}
    print(table(out))
    if args.json:
        atomic_write_json(args.json, out)
    return 0


def with_intervals(result: dict) -> dict:
    """Each multiple-choice task's primary metric with its 95% bootstrap interval (seeded)."""
    from forgetless.metrics.intervals import bootstrap_accuracy

    sets = {}
    for name, numbers in result["sets"].items():
        records = result["predictions"][name]
        if "accuracy" in numbers:
            numbers = {**numbers, "interval": bootstrap_accuracy([r[numbers["metric"]] for r in records["items"]])}
        sets[name] = numbers
    return sets


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def table(out: dict) -> str:
    lines = [f"{out['model']} base on llm-zero-shot (--eval-size {out['eval_size']}, batch {out['eval_batch_size']})"]
    for name, s in out["sets"].items():
        if "interval" in s:
            i = s["interval"]
            lines.append(f"  {name:<24} {s['metric']:<8} {100 * s['accuracy']:5.1f}  [{100 * i['low']:.1f}, "
                         f"{100 * i['high']:.1f}]  acc {100 * s['acc']:.1f}  n={s['n']}")
        else:
            lines.append(f"  {name:<24} word perplexity {s.get('word_perplexity', float('nan')):.2f}  "
                         f"bits/byte {s.get('bits_per_byte', float('nan')):.3f}  n={s['n']} documents")
    lm = out["language_model"] or {}
    if lm:
        lines.append(f"  WikiText-2 perplexity {lm['perplexity']:.2f} ({json.dumps({k: lm[k] for k in lm if k in ('tokens', 'windows', 'window')})})")
    lines.append(f"  wall {out['wall_s']:.0f} s, CPU {out['cpu_s']:.0f} s, peak RSS {out['peak_rss_gb']:.2f} GB, "
                 f"{out['threads']} threads, load {out['loadavg_before'][0]:.2f} -> {out['loadavg_after'][0]:.2f}"
                 + (" (REUSED from the cache: the times are not an evaluation's)" if out["reused_from_cache"] else ""))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
