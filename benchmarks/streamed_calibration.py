"""Streamed vs fully loaded one-shot compression of an LLM (``--model``, default SmolLM2-135M;
``--method`` SparseGPT 50% unstructured, default, GPTQ 4-bit in groups of 128, or the W8A8-INT8 scheme:
SmoothQuant α 0.8, then GPTQ int8 with int8 inputs, streamed as two passes): the same weights, the peak
memory of each, the wall-time ratio.

Protocol:
- Every compression runs in a fresh process (``--worker loaded|streamed``), started by this small
  driver (no model loaded here), so a worker's ``VmHWM`` is its own. After importing torch,
  transformers and forgetless (and reading the calibration texts), the worker records its resident
  set, resets its high-water mark (``metrics.memory.PeakMemory``: ``/proc/self/clear_refs``) and
  runs **the step**, which is timed:
  * ``loaded``: ``load_causal_lm(folder)`` + ``forgetless.apply(model, config, calibration=texts)`` +
    ``save_model`` (the fully loaded path, as ``forgetless compress`` holds the model);
  * ``streamed``: ``forgetless.apply_streamed(folder, config, calibration=texts, out_dir=...)`` (one decoder
    layer in memory at a time, ``methods/_shared/streamed.py``).
  Recorded: the step's peak resident set and what it added above the resident set at its start,
  the process's ``VmHWM`` (imports included), wall and CPU time, and the sha256 of every tensor of
  the saved ``model.safetensors`` (names, dtypes and bytes, sorted by name).
- ``--pairs`` pairs, the two modes alternating inside each pair and the order flipping from one pair
  to the next (loaded first, then streamed first, …). A thread samples ``/proc/loadavg`` every
  second while a worker runs; the 1-minute load average during each run is kept.
- Calibration: ``--calibration`` WikiText-2 test paragraphs (the first ones of at least 400
  characters), cut to ``--seq-len`` tokens, batches of ``--batch``; ``--threads`` torch threads.

    python benchmarks/streamed_calibration.py --data-dir ../shared/data --pairs 2
    nice -n 10 python benchmarks/streamed_calibration.py --model qwen2.5-coder-1.5b --method gptq --pairs 1 --threads 2

(``--method w8a8-int8`` streams two passes: the SmoothQuant pass's float folder sits inside the streamed worker's
output folder until the GPTQ pass has read it, so that disk needs three times the model's weights free.)

Every run (JSON) and the table (markdown) are printed; ``--out FILE`` writes the table there too. Each
finished run is appended to ``<out-dir>/runs.jsonl`` as it ends; a rerun with the same settings skips the
runs recorded there (a run of hours can be stopped between workers and resumed).
``benchmarks/streamed_calibration_results.md`` holds the runs of record and their reading.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("loaded", "streamed")


def texts(data_dir: Path, count: int) -> list[str]:
    lines = (data_dir / "llm" / "wikitext2" / "wiki.test.raw").read_text(encoding="utf-8").splitlines()
    long = [line.strip() for line in lines if len(line.strip()) >= 400 and not line.strip().startswith("=")]
    return long[:count]


def digest(folder: Path) -> str:
    import torch
    from safetensors import safe_open

    sha = hashlib.sha256()
    with safe_open(str(folder / "model.safetensors"), framework="pt") as handle:
        for name in sorted(handle.keys()):
            tensor = handle.get_tensor(name).contiguous()
            sha.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
            sha.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return sha.hexdigest()[:16]


def worker(args) -> None:
    """One compression in this process; prints one JSON line."""
    import torch

    import forgetless
    import forgetless.api  # every module both paths use, imported before the step (not part of its peak)
    import forgetless.methods._shared.streamed  # noqa: F401
    from forgetless.methods.gptq.config import GptqConfig
    from forgetless.methods.sparsegpt.config import SparseGptConfig
    from forgetless.metrics.memory import PeakMemory, status_bytes
    from forgetless.models.io import save_model
    from forgetless.models.loading import load_causal_lm, resolve_model_path
    from forgetless.schemes import scheme_methods

    torch.set_num_threads(args.threads)
    folder = resolve_model_path(args.model)
    calibration = texts(Path(args.data_dir), args.calibration)
    calibration_options = dict(calibration_examples=args.calibration, calibration_length=args.seq_len,
                               calibration_batch=args.batch)
    config = {"sparsegpt": lambda: SparseGptConfig(sparsity=0.5, **calibration_options),
              "gptq": lambda: GptqConfig(bits=4, group_size=128, **calibration_options),
              "w8a8-int8": lambda: [dataclasses.replace(c, **calibration_options)
                                    for c in scheme_methods("W8A8-INT8")]}[args.method]()
    out = Path(args.out_dir) / args.worker
    for method in config if isinstance(config, list) else [config]:
        forgetless.METHODS.build(method)  # the methods' modules imported
    cpu, start = os.times(), time.perf_counter()
    with PeakMemory() as peak:
        if args.worker == "loaded":
            model, tokenizer = load_causal_lm(folder)
            compressed = forgetless.apply(model, config, calibration=calibration, tokenizer=tokenizer)
            save_model(compressed, out, tokenizer)
            del model, compressed
        else:
            forgetless.apply_streamed(folder, config, calibration=calibration, out_dir=out)
    seconds, after = time.perf_counter() - start, os.times()
    print(json.dumps({"mode": args.worker, "model": args.model, "method": args.method, "seconds": seconds,
                      "cpu_seconds": (after.user - cpu.user) + (after.system - cpu.system),
                      **peak.result, "process_vmhwm_mib": round(status_bytes("VmHWM") / 2 ** 20, 1),
                      "weights_sha256": digest(out), "threads": torch.get_num_threads()}))


class LoadSampler(threading.Thread):
    """The 1-minute load average, every second, while a worker runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[float] = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(float(Path("/proc/loadavg").read_text().split()[0]))
            self.stop.wait(1.0)


def run_worker(args, mode: str, out_dir: Path) -> dict:
    import shutil

    shutil.rmtree(out_dir / mode, ignore_errors=True)
    command = [sys.executable, __file__, "--worker", mode, "--out-dir", str(out_dir), "--model", args.model,
               "--method", args.method,
               "--data-dir", args.data_dir, "--calibration", str(args.calibration), "--seq-len", str(args.seq_len),
               "--batch", str(args.batch), "--threads", str(args.threads)]
    sampler = LoadSampler()
    sampler.start()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    sampler.stop.set()
    sampler.join()
    if done.returncode != 0:
        raise SystemExit(f"{mode} worker failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["load"] = [min(sampler.samples), max(sampler.samples)] if sampler.samples else None
    return result


def settings(args) -> dict:
    """What makes two runs comparable: a recorded run is reused only under the same settings."""
    return {key: getattr(args, key) for key in ("model", "method", "calibration", "seq_len", "batch", "threads")}


def finished_runs(path: Path, wanted: dict) -> dict:
    """The runs already recorded in ``path`` (one JSON line each) under the settings ``wanted``, by
    (pair, mode): a rerun after a kill starts at the first run not recorded."""
    if not path.exists():
        return {}
    runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(run["pair"], run["mode"]): run for run in runs if run.get("settings") == wanted}


def table(runs: list[dict], args) -> str:
    by = {mode: [r for r in runs if r["mode"] == mode] for mode in MODES}
    digests = {r["weights_sha256"] for r in runs}
    lines = ["| mode | runs | wall s (each) | CPU s (median) | step peak RSS MiB | added by the step MiB | "
             "process VmHWM MiB | load (1-min, during) | weights sha256 |",
             "|---|---:|---|---:|---:|---:|---:|---|---|"]
    for mode, rs in by.items():
        walls = ", ".join(f"{r['seconds']:.0f}" for r in rs)
        lines.append(f"| {mode} | {len(rs)} | {walls} | "
                     f"{statistics.median(r['cpu_seconds'] for r in rs):.0f} | "
                     f"{max(r['peak_rss_mib'] for r in rs):.0f} | {max(r['added_mib'] for r in rs):.0f} | "
                     f"{max(r['process_vmhwm_mib'] for r in rs):.0f} | "
                     f"{min(r['load'][0] for r in rs):.1f}–{max(r['load'][1] for r in rs):.1f} | "
                     f"{', '.join(sorted({r['weights_sha256'] for r in rs}))} |")
    loaded, streamed = by["loaded"], by["streamed"]
    ratio = lambda key: max(r[key] for r in streamed) / max(r[key] for r in loaded)  # noqa: E731
    pairs = [s["seconds"] / l_["seconds"] for l_, s in zip(loaded, streamed)]
    shown = ", ".join(f"{p:.2f}" for p in pairs)
    cpu_ratio = (statistics.median(r["cpu_seconds"] for r in streamed)
                 / statistics.median(r["cpu_seconds"] for r in loaded))
    lines += ["", f"- identical weights in every run: **{'yes' if len(digests) == 1 else 'NO'}** "
                  f"({len(digests)} distinct digest{'s' if len(digests) != 1 else ''})",
              f"- streamed / loaded peak resident set of the step: **{ratio('peak_rss_mib'):.0%}**; "
              f"memory the step added: **{ratio('added_mib'):.0%}**; process VmHWM: {ratio('process_vmhwm_mib'):.0%}",
              f"- streamed / loaded wall time per pair: {shown} "
              f"(median {statistics.median(pairs):.2f}; CPU time median {cpu_ratio:.2f})"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=MODES)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--method", choices=("sparsegpt", "gptq", "w8a8-int8"), default="sparsegpt")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--calibration", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--out-dir", default="/tmp/streamed-calibration")
    parser.add_argument("--out", default=None, help="write the table (markdown) here too")
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = finished_runs(out_dir / "runs.jsonl", settings(args))
    runs = []
    for pair in range(args.pairs):
        for mode in (MODES if pair % 2 == 0 else MODES[::-1]):
            if (pair, mode) not in done:
                done[pair, mode] = {"pair": pair, "settings": settings(args), **run_worker(args, mode, out_dir)}
                with (out_dir / "runs.jsonl").open("a") as handle:
                    handle.write(json.dumps(done[pair, mode]) + "\n")
            runs.append(done[pair, mode])
            print(json.dumps(runs[-1]), flush=True)
    text = table(runs, args)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
