"""Benchmark: `forgetless evaluate` end to end against a plain transformers script.

Both evaluate the same saved model (the bundled MiniLM with a seeded 2-label head, saved as a
Hugging Face folder) on the same data: SST-2 dev (872) and AdvGLUE-sst2 (148) from
``--data-dir``. Each is a fresh interpreter (import time included), run interleaved
(forgetless, plain, forgetless, plain, …) so machine load hits both alike; the script prints the
median and spread of each and the ratio, with the load average, and checks that both report the
same accuracies.

The plain script is what a user writes from the transformers docs: read the two files, tokenize
each batch of 32 with ``padding=True, truncation=True, max_length=128``, ``torch.no_grad()``,
argmax, accuracy.

    python benchmarks/evaluate_vs_plain.py --data-dir ../shared/data --repeats 5
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
import csv, json, sys
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

model_dir, data_dir = sys.argv[1], sys.argv[2]
tokenizer = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForSequenceClassification.from_pretrained(model_dir, use_safetensors=True).eval()
with open(f"{data_dir}/glue/SST-2/dev.tsv", encoding="utf-8") as f:
    rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
sets = {"dev": [(r["sentence"], int(r["label"])) for r in rows]}
with open(f"{data_dir}/advglue/dev.json", encoding="utf-8") as f:
    sets["advglue_sst2"] = [(r["sentence"], int(r["label"])) for r in json.load(f)["sst2"]]
result = {}
with torch.no_grad():
    for name, data in sets.items():
        correct = 0
        for i in range(0, len(data), 32):
            texts, labels = zip(*data[i:i + 32])
            enc = tokenizer(list(texts), padding=True, truncation=True, max_length=128, return_tensors="pt")
            pred = model(**enc).logits.argmax(-1)
            correct += int((pred == torch.tensor(labels)).sum())
        result[name] = correct / len(data)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    data_dir = str(Path(args.data_dir).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        import torch

        from forgetless.models.loading import load_classifier

        torch.manual_seed(0)
        model, tokenizer = load_classifier("minilm", ["negative", "positive"])
        model.save_pretrained(f"{tmp}/model")
        tokenizer.save_pretrained(f"{tmp}/model")
        Path(f"{tmp}/plain.py").write_text(PLAIN)
        commands = {
            "forgetless evaluate": [sys.executable, "-m", "forgetless.cli", "evaluate", f"{tmp}/model", "--task", "sst2",
                                    "--data-dir", data_dir, "--json", f"{tmp}/scores.json"],
            "plain transformers script": [sys.executable, f"{tmp}/plain.py", f"{tmp}/model", data_dir],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        outputs: dict[str, str] = {}
        print(f"load average before: {load()}")
        for rep in range(args.repeats):
            for name, cmd in commands.items():
                seconds, outputs[name] = timed_run(cmd)
                times[name].append(seconds)
                print(f"rep {rep}: {name}: {seconds:.2f} s (load {load()})", flush=True)
        scores = json.loads(Path(f"{tmp}/scores.json").read_text())
    ours = {name: round(s["accuracy"], 6) for name, s in scores["sets"].items()}
    plain = {name: round(acc, 6) for name, acc in json.loads(outputs["plain transformers script"]).items()}
    print(f"load average after: {load()}")
    for name, t in times.items():
        print(f"{name:>26}: {spread(t)}")
    ratio = statistics.median(times["plain transformers script"]) / statistics.median(times["forgetless evaluate"])
    print(f"plain / forgetless (median wall time): {ratio:.2f}x")
    print(f"accuracies: forgetless {ours}; plain {plain}; {'same' if ours == plain else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
