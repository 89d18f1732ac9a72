"""NASH on TweetQA with a bert2bert model warm-started from the bundled MiniLM (CPU, time-boxed).

1. Fine-tune the teacher (bert2bert-MiniLM, 6 + 6 layers) on a seeded subset of TweetQA train.
2. NASH with d_s = 2, 3, 4 uniformly selected decoder layers and a 30% narrow encoder (Ko et al.
   Tables 1-3), and the CoFi-style baseline at the parameter sparsity NASH d_s = 3 reaches.
3. Evaluate every model on TweetQA dev (METEOR, ROUGE-L) and time greedy generation of all of
   them side by side in one interleaved run → speedups.
4. Profile (Figure 3 / Finding 3.1): encoder-layer time vs length by width; encoder vs decoder
   share of generation time, base vs NASH d_s = 3.

    python benchmarks/nash_tweetqa.py --data-dir ../shared/data --out runs/bench_nash

Budget knobs: --n-train, --n-dev, --teacher-epochs, --prune-epochs, --finetune-epochs, --threads.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from forgetless.fsutil import atomic_write_json, atomic_write_text
from forgetless.models import io
from forgetless.models.adapters import get_adapter
from forgetless.seq2seq import speed
from forgetless.seq2seq.data import load_task
from forgetless.seq2seq.evaluate import evaluate_task
from forgetless.seq2seq.l0masks import head_param_count, unit_param_count
from forgetless.seq2seq.pipeline import run_compress, run_profile, train_teacher


def prunable_params(model) -> int:
    adapter = get_adapter(model)
    heads = sum(head_param_count(s) * s.num_heads for s in adapter.attention_sites(model))
    units = sum(unit_param_count(s) * s.width for s in adapter.ffn_sites(model))
    return heads + units


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default="../shared/data")
    p.add_argument("--out", default="runs/bench_nash")
    p.add_argument("--model", default="minilm")
    p.add_argument("--teacher", default=None, help="an already fine-tuned teacher folder (skips step 1)")
    p.add_argument("--n-train", type=int, default=1000)
    p.add_argument("--n-dev", type=int, default=200)
    p.add_argument("--teacher-epochs", type=float, default=3.0)
    p.add_argument("--prune-epochs", type=float, default=1.0)
    p.add_argument("--finetune-epochs", type=float, default=0.5)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--learning-rate", type=float, default=1e-4)
    p.add_argument("--teacher-learning-rate", type=float, default=3e-4)
    p.add_argument("--l0-learning-rate", type=float, default=0.05)
    p.add_argument("--max-source-length", type=int, default=64)
    p.add_argument("--max-target-length", type=int, default=16)
    p.add_argument("--max-new-tokens", type=int, default=12)
    p.add_argument("--decoder-layers", type=int, nargs="+", default=[2, 3, 4])
    p.add_argument("--encoder-sparsity", type=float, default=0.3)
    p.add_argument("--speed-batch-size", type=int, default=8)
    p.add_argument("--speed-beams", type=int, default=1)
    p.add_argument("--speed-new-tokens", type=int, default=12)
    p.add_argument("--speed-repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--no-cofi", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    out = Path(a.out)
    started = time.time()
    stamps = {}
    common = dict(data_dir=a.data_dir, n_train=a.n_train, n_dev=a.n_dev, seed=a.seed, batch_size=a.batch_size,
                  learning_rate=a.learning_rate, max_source_length=a.max_source_length,
                  max_target_length=a.max_target_length, max_new_tokens=a.max_new_tokens)
    task = load_task("tweetqa", a.data_dir, a.n_train, a.n_dev, a.seed)
    teacher_dir = Path(a.teacher) if a.teacher else out / "teacher"
    teacher, tokenizer, _ = train_teacher(a.model, "tweetqa", teacher_dir, epochs=a.teacher_epochs,
                                          freeze_embeddings=True, task_obj=task,
                                          **{k: v for k, v in common.items()
                                             if k not in ("data_dir", "n_train", "n_dev", "learning_rate")},
                                          learning_rate=a.teacher_learning_rate)
    stamps["teacher"] = time.time() - started
    gen = dict(batch_size=32, max_source_length=a.max_source_length, max_new_tokens=a.max_new_tokens, num_beams=1)
    teacher_eval = evaluate_task(teacher, tokenizer, task, **gen)
    run = dict(teacher=str(teacher_dir), task="tweetqa", prune_epochs=a.prune_epochs,
               finetune_epochs=a.finetune_epochs, l0_learning_rate=a.l0_learning_rate, freeze_embeddings=True,
               speed_batch_size=a.speed_batch_size, speed_beams=a.speed_beams, speed_new_tokens=a.speed_new_tokens,
               speed_repeats=2, teacher_eval=teacher_eval, threads=a.threads, **common)
    reports = {}
    for d in a.decoder_layers:
        reports[f"nash_d{d}"] = run_compress("nash", output_dir=out / f"nash_d{d}", decoder_layers=d,
                                             encoder_sparsity=a.encoder_sparsity, **run)
        stamps[f"nash_d{d}"] = time.time() - started
    models = {"teacher": teacher}
    for name in reports:
        models[name] = io.load_model(out / name / "model")[0]
    if not a.no_cofi:
        ref = models.get("nash_d3") or models[list(reports)[0]]
        cofi_sparsity = round(1 - prunable_params(ref) / prunable_params(teacher), 3)
        reports["cofi"] = run_compress("cofi", output_dir=out / "cofi", sparsity=cofi_sparsity, **run)
        models["cofi"] = io.load_model(out / "cofi" / "model")[0]
        stamps["cofi"] = time.time() - started
    timing = speed.compare_generation(models, tokenizer, task.dev.sources, batch_size=a.speed_batch_size,
                                      num_beams=a.speed_beams, max_new_tokens=a.speed_new_tokens,
                                      max_source_length=a.max_source_length, repeats=a.speed_repeats)
    profile = run_profile(a.model, out / "profile", compressed=str(out / "nash_d3" / "model")
                          if (out / "nash_d3" / "model").exists() else None,
                          seq_lengths=(16, 32, 64, 128, 256), batch_size=8, max_new_tokens=a.speed_new_tokens,
                          source_length=a.max_source_length - 2, repeats=3, threads=a.threads)
    rows = {"teacher": {"eval": teacher_eval["dev"], "params": teacher.num_parameters(), "sparsity": 0.0,
                        "layers": {k: len(v) for k, v in get_adapter(teacher).stacks(teacher).items()}}}
    for name, rep in reports.items():
        method = rep["method"]
        row = rep["models"][method]
        rows[name] = {"eval": row["eval"]["dev"], "params": row["params"], "layers": row["layers"],
                      "sparsity": 1 - prunable_params(models[name]) / prunable_params(teacher),
                      "encoder_sparsity_target": row.get("sparsity"),
                      "masked_equals_sliced": rep["masked_equals_sliced"], "pair_speedup": row["speedup"]}
    lines = [f"# NASH on TweetQA (bert2bert-{a.model}), {a.n_train} train / {a.n_dev} dev, CPU threads {a.threads}", "",
             "| model | enc/dec layers | params (M) | prunable sparsity | METEOR | ROUGE-L | distinct preds | "
             "latency (s) | speedup |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in rows.items():
        ev = row["eval"]
        lines.append(f"| {name} | {row['layers']['encoder']}/{row['layers']['decoder']} | {row['params'] / 1e6:.1f} | "
                     f"{row['sparsity']:.2f} | {ev['meteor']:.2f} | {ev['rougeL']:.2f} | "
                     f"{ev.get('distinct_predictions', 0):.2f} | "
                     f"{timing['seconds'][name]:.3f} | {timing['speedup'][name]:.2f}× |")
    lines += ["", f"Speed: {json.dumps(timing['setting'])}; all models timed interleaved in one run.",
              f"METEOR stages: {teacher_eval['dev'].get('meteor_stages')}.", "", "## Profile", "",
              "| heads | FFN | " + " | ".join(f"L={n}" for n in (16, 32, 64, 128, 256)) + " |",
              "|---:|---:|" + "---:|" * 5]
    by_width: dict = {}
    for r in profile["layer_profile"]:
        by_width.setdefault((r["heads"], r["ffn"]), []).append(r["ms"])
    for (h, f), ms in by_width.items():
        lines.append(f"| {h} | {f} | " + " | ".join(f"{m:.2f}" for m in ms) + " |")
    for name, share in profile["generation_share"].items():
        lines.append(f"\nGeneration time share ({name}): encoder {share['encoder_share']:.1%}, decoder "
                     f"{share['decoder_share']:.1%}, other {share['other_share']:.1%} of {share['total_seconds']:.3f} s")
    summary = {"rows": rows, "speed": timing, "profile": profile, "stage_seconds": stamps,
               "total_seconds": time.time() - started, "args": vars(a)}
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "summary.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"total {summary['total_seconds'] / 60:.1f} min; stages {json.dumps({k: round(v) for k, v in stamps.items()})}")
    return summary


if __name__ == "__main__":
    main()
