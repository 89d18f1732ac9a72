"""A small evaluation, whole processes: ``forgetless evaluate`` against lm-eval's own ``simple_evaluate`` on the
same SmolLM2 folder and the same 60 HellaSwag items (a task YAML of the user's own, ``--lm-eval-include``),
in CPU time (user + system of the process and its children), idle and beside another job.

Beside ``llm_vs_lm_eval.py`` (six tasks × 500 items, scoring alone): at 60 items a run's fixed cost (imports,
the model's checks, its counts) is a large part of the whole, and it is what this one measures. Three sides,
each a fresh process, interleaved (forgetless, lm-eval, forgetless-cached, forgetless, …):

* ``forgetless``: ``python -m forgetless evaluate FOLDER --task lm-eval --lm-eval-tasks hellaswag60
  --lm-eval-include DIR --eval-batch-size B`` with a fresh ``$FORGETLESS_CACHE`` (nothing reused);
* ``lm-eval``: ``HFLM(pretrained=FOLDER, batch_size=B)`` and ``simple_evaluate(tasks=["hellaswag60"],
  task_manager=TaskManager(include_path=DIR))``, as its documentation has it;
* ``forgetless-cached``: the forgetless command again on a cache that holds its scores: the fixed cost alone.

``--busy N`` runs N busy-loop processes (one core each, bounded by ``--busy-seconds``, ended when the
benchmark ends) while the sides run: "another job on the machine". The 1-minute load average is sampled every
5 s during each run.

    python benchmarks/evaluate_fixed_cost.py --data-dir ../shared/data --repeats 2 --out runs/bench-fixed
    python benchmarks/evaluate_fixed_cost.py --data-dir ../shared/data --repeats 2 --busy 1 --out runs/bench-fixed
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TASK = "hellaswag60"
LM_EVAL = """
import sys
from lm_eval import simple_evaluate
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager

folder, include, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
lm = HFLM(pretrained=folder, batch_size=batch, max_length=2048, device="cpu")
out = simple_evaluate(model=lm, tasks=["hellaswag60"], task_manager=TaskManager(include_path=include),
                      bootstrap_iters=0)
print("hellaswag60", out["results"]["hellaswag60"])
"""


def write_task(data_dir: str, out: Path, items: int) -> Path:
    """The first ``items`` HellaSwag validation items as a JSON-lines file and a task YAML of the user's own."""
    from forgetless.llm.tasks.offline import hellaswag

    folder = out / "tasks"
    folder.mkdir(parents=True, exist_ok=True)
    rows = list(hellaswag(data_dir)["test"])[:items]
    data = folder / f"{TASK}.jsonl"
    data.write_text("".join(json.dumps({"query": r["query"], "choices": r["choices"], "label": int(r["label"])}) + "\n"
                            for r in rows))
    (folder / f"{TASK}.yaml").write_text(
        f"task: {TASK}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\n"
        "output_type: multiple_choice\ntest_split: test\ndoc_to_text: \"{{query}}\"\ndoc_to_target: \"{{label}}\"\n"
        "doc_to_choice: \"choices\"\nmetric_list:\n  - metric: acc\n  - metric: acc_norm\n")
    return folder


def command(side: str, folder: str, tasks: Path, batch: int) -> list[str]:
    if side == "lm-eval":
        return [sys.executable, "-c", LM_EVAL, folder, str(tasks), str(batch)]
    return [sys.executable, "-m", "forgetless", "evaluate", folder, "--task", "lm-eval", "--lm-eval-tasks", TASK,
            "--lm-eval-include", str(tasks), "--eval-batch-size", str(batch)]


def timed(cmd: list[str], log: Path, cache: Path) -> dict:
    """Wall and CPU seconds (user + system of the child) of one process, the load average sampled every 5 s."""
    loads, done = [os.getloadavg()[0]], threading.Event()

    def sample():
        while not done.wait(5):
            loads.append(os.getloadavg()[0])

    threading.Thread(target=sample, daemon=True).start()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FORGETLESS_CACHE": str(cache), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with open(log, "w") as handle:
        code = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT, env=env).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    done.set()
    if code:
        raise SystemExit(f"{cmd[:4]} failed (exit {code}); see {log}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "load_mean": statistics.mean(loads), "load_max": max(loads)}


def busy_loops(count: int, seconds: float) -> list[subprocess.Popen]:
    """``count`` processes that each keep one core busy for at most ``seconds``."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64, help="forgetless's default evaluation batch size")
    parser.add_argument("--busy", type=int, default=0, help="busy-loop processes beside the runs (one core each)")
    parser.add_argument("--busy-seconds", type=float, default=3600, help="the longest a busy loop runs")
    parser.add_argument("--sides", default="forgetless,lm-eval,forgetless-cached")
    args = parser.parse_args()
    from forgetless.offline_models import offline_folder

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    folder = str(offline_folder("smollm2"))
    tasks = write_task(args.data_dir, out, args.items)
    sides = args.sides.split(",")
    warm = out / "cache-warm"  # the scores forgetless-cached reuses
    if "forgetless-cached" in sides and not warm.is_dir():
        timed(command("forgetless", folder, tasks, args.batch_size), out / "warm.log", warm)
    loops = busy_loops(args.busy, args.busy_seconds)
    rows = []
    try:
        for repeat in range(args.repeats):
            for side in sides:
                cache = warm if side == "forgetless-cached" else out / f"cache-{side}-{args.busy}-{repeat}"
                row = {"repeat": repeat, "side": side, "busy": args.busy,
                       **timed(command(side.removesuffix("-cached"), folder, tasks, args.batch_size),
                               out / f"{side}-busy{args.busy}-{repeat}.log", cache)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    (out / f"results-busy{args.busy}.json").write_text(json.dumps(rows, indent=1))
    median = {side: statistics.median(r["cpu_s"] for r in rows if r["side"] == side) for side in sides}
    for side in sides:
        print(f"{side}: CPU median {median[side]:.1f} s")
    if "lm-eval" in median and "forgetless" in median:
        print(f"forgetless / lm-eval CPU: {median['forgetless'] / median['lm-eval']:.2f}×")


if __name__ == "__main__":
    main()
