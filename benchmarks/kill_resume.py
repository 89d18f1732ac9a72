"""kill -9, then the same command again (issue 43): a streamed one-shot compression killed on the
first layer, midway and while its weights file is written, and an LLM-suite compress run killed while
the compressed model is evaluated. Checked after each kill: the output folder does not exist (nothing
half-written there to load), the hidden temporary folder the kill left does not load (forgetless nor
transformers); after the rerun: the weights are those of an uninterrupted run (sha256 of the file, and
of every file of the folder), the card's numbers equal the uninterrupted run's, and the kill's
temporary folder is gone.

Each kill is a fresh worker process (``--worker``) that runs the job with one hook of this script's
own (never of forgetless): at the kill point it writes a marker file and sleeps; the driver waits for
the marker, sends SIGKILL and reruns the job in a fresh worker with no hook.

* ``streamed``: ``forgetless.apply_streamed(FOLDER, SparseGptConfig(...), calibration=texts, out_dir=OUT)``;
  kill points ``first`` (layer 0 released), ``midway`` (layer L/2 released), ``writing`` (the first
  64 KiB of ``model.safetensors`` copied from its side files);
* ``suite``: ``forgetless compress --model M --base as-is --method wanda --task llm-zero-shot
  --data-dir D --eval-size N --out OUT``; kill point ``evaluating`` (the compressed model's lm-eval
  call started: the base model's evaluation is in the shared cache by then).

    python benchmarks/kill_resume.py --model tiny        # a tiny Llama, every kill point (about 2 min)
    nice -n 5 python benchmarks/kill_resume.py --model smollm2 --jobs streamed --data-dir ../shared/data

Prints one JSON line per kill and a summary table; ``--out FILE`` writes the table there too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POINTS = {"streamed": ("first", "midway", "writing"), "suite": ("evaluating",)}
TEXTS = [f"calibration text {i}: the council met on a wet Tuesday and agreed a budget for roads, schools and "
         f"the river bridge, number {i}" for i in range(32)]


# ----- the worker: one job, maybe stopped at a kill point ----------------------------------------------------
def hook(point: str, marker: Path) -> None:
    """Install the kill point: at it, write ``marker`` and sleep until killed."""
    def stop():
        marker.write_text(str(os.getpid()))
        time.sleep(3600)

    if point in ("first", "midway"):
        from forgetless.models import streaming

        release = streaming.LayerStream.release

        def released(self, stack, index, layer):
            release(self, stack, index, layer)
            if index == (0 if point == "first" else len(self.layers) // 2):
                stop()
        streaming.LayerStream.release = released
    elif point == "writing":
        from forgetless.models import streaming

        def copy(source, target, length=0):
            target.write(source.read(64 * 1024))
            target.flush()
            stop()
        streaming.shutil.copyfileobj = copy
    elif point == "evaluating":
        from forgetless.llm import engine

        evaluate, calls = engine.evaluate, []

        def evaluated(*args, **kwargs):
            calls.append(1)
            if len(calls) == 2:  # base first, then the compressed model
                stop()
            return evaluate(*args, **kwargs)
        engine.evaluate = evaluated


def worker(args) -> None:
    if args.point:
        hook(args.point, Path(args.marker))
    if args.job == "streamed":
        import forgetless
        from forgetless.methods.sparsegpt.config import SparseGptConfig

        config = SparseGptConfig(sparsity=0.5, calibration_examples=args.calibration, calibration_length=args.seq_len,
                                 calibration_batch=4)
        forgetless.apply_streamed(args.folder, config, calibration=TEXTS, out_dir=args.target)
    else:
        from forgetless.cli import main

        sys.exit(main(suite_argv(args)))


def suite_argv(args) -> list[str]:
    return ["compress", "--model", args.model_name, "--base", "as-is", "--method", "wanda", "--calibration-examples",
            str(args.calibration), "--calibration-length", str(args.seq_len), "--task", "llm-zero-shot",
            "--data-dir", args.data_dir, "--eval-size", str(args.eval_size), "--eval-batch-size", "4",
            "--bench-repeats", "1", "--bench-seq-len", "16", "--bench-new-tokens", "2", "--no-progress",
            "--out", args.target]


# ----- the driver --------------------------------------------------------------------------------------------
def run(args, job: str, target: Path, point: str | None = None, marker: Path | None = None):
    """A worker doing ``job`` into ``target`` (stopped at ``point``); the cache is the target's own,
    shared by a killed run and its rerun as a user's would be."""
    command = [sys.executable, __file__, "--worker", "--job", job, "--target", str(target), "--folder", args.folder,
               "--model-name", args.model_name, "--data-dir", str(args.data_dir), "--calibration", str(args.calibration),
               "--seq-len", str(args.seq_len), "--eval-size", str(args.eval_size)]
    if point:
        command += ["--point", point, "--marker", str(marker)]
    cache = target.parent / f"cache-{target.name}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGETLESS_CACHE": str(cache), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def finished(process, what: str) -> None:
    _, err = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{what} failed ({process.returncode}): {err[-2000:]}")


def kill_at(args, job: str, target: Path, point: str) -> dict:
    """Start the job, kill -9 it at ``point``; what the kill left."""
    marker = target.parent / f".marker-{point}"
    marker.unlink(missing_ok=True)
    process = run(args, job, target, point, marker)
    start = time.time()
    while not marker.exists():
        if process.poll() is not None:
            raise SystemExit(f"{job} {point}: ended before the kill point: {process.stderr.read()[-2000:]}")
        time.sleep(0.2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    marker.unlink()
    left = leftovers(job, target)
    return {"job": job, "point": point, "killed_after_s": round(time.time() - start, 1),
            "model_folder_after_kill": loads(model_folder(job, target)) if model_folder(job, target).exists() else
            "absent", "leftovers_after_kill": {p.name: size(p) for p in left},
            "leftover_loads": {p.name: loads(p) for p in left}}


def model_folder(job: str, target: Path) -> Path:
    """Where the job's model folder goes: the output itself (streamed), OUT/model (a compress run)."""
    return target / "model" if job == "suite" else target


def leftovers(job: str, target: Path) -> list[Path]:
    """Hidden temporary siblings of the job's model folder."""
    where = model_folder(job, target)
    return sorted(where.parent.glob(f".{where.name}.tmp-*"))


def size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.is_dir() else path.stat().st_size


def loads(folder: Path) -> str:
    """How a half-written folder answers a load: forgetless's error, transformers' error (or "LOADED")."""
    import transformers

    from forgetless.errors import ForgetlessError
    from forgetless.models.io import load_model

    answers = []
    try:
        load_model(folder)
        answers.append("forgetless: LOADED")
    except ForgetlessError as exc:
        answers.append(f"forgetless: {type(exc).__name__}")
    try:
        transformers.AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True)
        answers.append("transformers: LOADED")
    except Exception as exc:  # noqa: BLE001 - whatever transformers raises is the answer
        answers.append(f"transformers: {type(exc).__name__}")
    return "; ".join(answers)


def hashes(folder: Path) -> dict:
    """sha256 of every file of a model folder (``recipe.yaml`` with its own output path written OUT)."""
    def content(f: Path) -> bytes:
        data = f.read_bytes()
        return data.replace(str(folder.parent).encode(), b"OUT") if f.name == "recipe.yaml" else data

    return {str(f.relative_to(folder)): hashlib.sha256(content(f)).hexdigest()[:16]
            for f in sorted(folder.rglob("*")) if f.is_file()}


def card_numbers(folder: Path) -> dict:
    card = json.loads((folder / "report.json").read_text())
    return {"sets": card["sets"], "language_model": card.get("language_model")}


def compare(args, job: str, reference: Path, target: Path, record: dict) -> dict:
    """Rerun the killed job in a fresh worker; compare with the uninterrupted reference."""
    start = time.time()
    finished(run(args, job, target), f"{job} rerun")
    record["rerun_s"] = round(time.time() - start, 1)
    ref, got = hashes(model_folder(job, reference)), hashes(model_folder(job, target))
    record["weights_sha256_equal"] = ref.get("model.safetensors") == got.get("model.safetensors") is not None
    record["files_differing"] = sorted(k for k in set(ref) | set(got) if ref.get(k) != got.get(k))
    if job == "suite":
        record["card_numbers_equal"] = card_numbers(reference) == card_numbers(target)
    record["leftovers_after_rerun"] = [p.name for p in leftovers(job, target)]
    return record


def prepare(args, root: Path) -> None:
    """The model folder and data folder of the jobs."""
    if args.model == "tiny":
        import torch
        import transformers

        from forgetless.models.loading import resolve_model_path
        from forgetless.models.tiny import tiny_llama_config

        tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_model_path("minilm"))
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(tiny_llama_config(tokenizer.vocab_size, tokenizer.pad_token_id,
                                                                num_hidden_layers=6, tie_word_embeddings=True))
        model.save_pretrained(root / "llama")
        tokenizer.save_pretrained(root / "llama")
        args.folder, args.model_name = str(root / "llama"), str(root / "llama")
        if args.data_dir is None:
            sys.path.insert(0, str(ROOT / "tests"))
            from llm_data import write_llm_data

            args.data_dir = write_llm_data(root / "data")
    else:
        from forgetless.models.loading import resolve_model_path

        args.folder, args.model_name = resolve_model_path(args.model), args.model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for name in ("job", "point", "marker", "target", "folder", "model-name"):
        parser.add_argument(f"--{name}", help=argparse.SUPPRESS)
    parser.add_argument("--model", default="tiny", help="tiny (a 6-layer random Llama) or a model name (smollm2)")
    parser.add_argument("--jobs", default="streamed,suite", help="streamed, suite or both (comma-separated)")
    parser.add_argument("--data-dir", default=None, help="the data folder (tiny: a generated one)")
    parser.add_argument("--calibration", type=int, default=8, help="calibration texts")
    parser.add_argument("--seq-len", type=int, default=32, help="tokens per calibration text")
    parser.add_argument("--eval-size", type=int, default=4, help="items per lm-eval task (suite)")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    root = Path(tempfile.mkdtemp(prefix="forgetless-kill-"))
    try:
        prepare(args, root)
        records = []
        for job in args.jobs.split(","):
            reference = root / f"{job}-reference"
            start = time.time()
            finished(run(args, job, reference), f"{job} reference")
            print(f"{job}: uninterrupted run {time.time() - start:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
            for point in POINTS[job]:
                target = root / f"{job}-{point}"
                record = compare(args, job, reference, target, kill_at(args, job, target, point))
                record["load"] = round(os.getloadavg()[0], 1)
                print(json.dumps(record), flush=True)
                records.append(record)
        table = summary(args, records)
        print(table)
        if args.out:
            Path(args.out).write_text(table)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def summary(args, records: list[dict]) -> str:
    lines = [f"kill -9 and rerun, model {args.model} ({time.strftime('%Y-%m-%d')})", "",
             "| job | kill point | model folder after kill | leftover after kill | leftover loads | weights sha256 = "
             "uninterrupted | card numbers = | leftovers after rerun | load |", "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        left = ", ".join(f"{k} ({v / 2**20:.1f} MiB)" for k, v in r["leftovers_after_kill"].items()) or "none"
        answers = "; ".join(sorted(set(r["leftover_loads"].values()))) or "-"
        lines.append(f"| {r['job']} | {r['point']} | {r['model_folder_after_kill']} | {left} | "
                     f"{answers} | {r['weights_sha256_equal']} | {r.get('card_numbers_equal', '-')} | "
                     f"{', '.join(r['leftovers_after_rerun']) or 'none'} | {r['load']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
