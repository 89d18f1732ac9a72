"""Benchmark: `forgetless evaluate` end to end against a plain transformers script.

Both evaluate the same saved model (the bundled MiniLM with a seeded head, saved as a Hugging
Face folder) on the same data, per task of ``--tasks``: every set of the forgetless task (SST-2:
dev 872 + AdvGLUE-sst2 148 short sentences; QNLI: the 20% dev split 1,092 + AdvGLUE-qnli 148
question/sentence pairs), which the benchmark writes to a JSON file that the plain script reads. Each is a fresh interpreter (import time included), run interleaved
(forgetless, plain, forgetless, plain, …) so machine load hits both alike; the script prints the
median and spread of each and the ratio, with the load average, and checks that both report the
same accuracies.

The plain script is what a user writes from the transformers docs: read the examples, tokenize
each batch of 32 with ``padding=True, truncation=True, max_length=128``, ``torch.no_grad()``,
argmax, accuracy. A second variant pads every batch to 128 tokens (``padding="max_length"``, the
default of the transformers examples' ``run_glue.py``): the ratio against it is printed too, but
the per-batch-padding script is the fair baseline. Batch sizes are each side's default: 64 for
`forgetless evaluate` (length-sorted), 32 in the plain script (in file order; a larger batch there
only pads more).

    python benchmarks/evaluate_vs_plain.py --data-dir ../shared/data --tasks sst2,qnli --repeats 5
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN = r'''
import json, sys
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

model_dir, data_file, padding = sys.argv[1], sys.argv[2], sys.argv[3]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForSequenceClassification.from_pretrained(model_dir, use_safetensors=True).eval()
with open(data_file, encoding="utf-8") as f:
    sets = json.load(f)
result = {}
with torch.no_grad():
    for name, rows in sets.items():
        correct = 0
        for i in range(0, len(rows), 32):
            batch = rows[i:i + 32]
            pair = [r["text_b"] for r in batch] if batch[0]["text_b"] is not None else None
            enc = tokenizer([r["text_a"] for r in batch], pair, padding=padding if padding == "max_length" else True, truncation=True, max_length=128,
                            return_tensors="pt")
            pred = model(**enc).logits.argmax(-1)
            correct += int((pred == torch.tensor([r["label"] for r in batch])).sum())
        result[name] = correct / len(rows)
print(json.dumps(result))
'''


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def timed_run(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return seconds, done.stdout


def spread(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} s (min {min(times):.2f}, max {max(times):.2f}, n={len(times)})"


def bench_task(name: str, data_dir: str, repeats: int, tmp: str) -> dict:
    import torch

    from forgetless.data.tasks import load_task
    from forgetless.models.loading import load_classifier

    task = load_task(name, data_dir=data_dir, seed=0)
    sets = {"dev": task.dev, **task.challenges}
    rows = {set_name: [{"text_a": ex.text_a[i], "text_b": ex.text_b[i] if ex.text_b else None,
                        "label": ex.labels[i]} for i in range(len(ex))] for set_name, ex in sets.items()}
    Path(f"{tmp}/{name}.json").write_text(json.dumps(rows))
    torch.manual_seed(0)
    model, tokenizer = load_classifier("minilm", task.label_names)
    model.save_pretrained(f"{tmp}/{name}-model")
    tokenizer.save_pretrained(f"{tmp}/{name}-model")
    commands = {
        "forgetless evaluate": [sys.executable, "-m", "forgetless.cli", "evaluate", f"{tmp}/{name}-model", "--task", name,
                                "--data-dir", data_dir, "--json", f"{tmp}/{name}-scores.json"],
        "plain transformers script": [sys.executable, f"{tmp}/plain.py", f"{tmp}/{name}-model", f"{tmp}/{name}.json",
                                      "longest"],
        "plain, padded to 128": [sys.executable, f"{tmp}/plain.py", f"{tmp}/{name}-model", f"{tmp}/{name}.json",
                                 "max_length"],
    }
    times: dict[str, list[float]] = {cmd: [] for cmd in commands}
    outputs: dict[str, str] = {}
    for rep in range(repeats):
        for cmd_name, cmd in commands.items():
            seconds, outputs[cmd_name] = timed_run(cmd)
            times[cmd_name].append(seconds)
            print(f"{name} rep {rep}: {cmd_name}: {seconds:.2f} s (load {load()})", flush=True)
    scores = json.loads(Path(f"{tmp}/{name}-scores.json").read_text())
    ours = {set_name: round(s["accuracy"], 6) for set_name, s in scores["sets"].items()}
    plain = {set_name: round(acc, 6) for set_name, acc in json.loads(outputs["plain transformers script"]).items()}
    return {"name": name, "sizes": {k: len(v) for k, v in rows.items()}, "times": times, "ours": ours, "plain": plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--tasks", default="sst2,qnli")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    data_dir = str(Path(args.data_dir).resolve())
    print(f"load average before: {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        Path(f"{tmp}/plain.py").write_text(PLAIN)
        results = [bench_task(name, data_dir, args.repeats, tmp) for name in args.tasks.split(",")]
    print(f"load average after: {load()}")
    for r in results:
        print(f"\n{r['name']} ({', '.join(f'{k} {v}' for k, v in r['sizes'].items())}):")
        for cmd_name, t in r["times"].items():
            print(f"{cmd_name:>28}: {spread(t)}")
        ours = statistics.median(r["times"]["forgetless evaluate"])
        for plain in ("plain transformers script", "plain, padded to 128"):
            ratio = statistics.median(r["times"][plain]) / ours
            print(f"{plain + ' / forgetless':>48}: {ratio:.2f}x (median wall time, import and model loading included)")
        same = r["ours"] == r["plain"]
        print(f"{'accuracies':>28}: forgetless {r['ours']}; plain {r['plain']}; {'same' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
