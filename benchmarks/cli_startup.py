"""Start-up time of the command line: `forgetless --help`, `forgetless compress --help` (also for one
method) and `forgetless list`.

Runs each command in a fresh interpreter, interleaved (A, B, A, B, …) so machine load hits both
alike, and reports the median and inter-quartile range of the wall time and of the import time
(``python -X importtime``: cumulative microseconds of the top-level ``forgetless.cli`` import).

    python benchmarks/cli_startup.py --repeats 7
    python benchmarks/cli_startup.py --repeats 7 --against /tmp/old-checkout   # A, B, A, B: this tree vs another

With ``--against FOLDER`` (a checkout of another version) each command also runs with that folder
first on ``PYTHONPATH`` (and as the working folder), interleaved with this one, and the ratio of the
medians is printed.
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {"forgetless --help": ["--help"], "forgetless compress --help": ["compress", "--help"],
            "forgetless compress --method wanda --help": ["compress", "--method", "wanda", "--help"],
            "forgetless list": ["list"]}


def run_once(args: list[str], root: str | None = None) -> tuple[float, float]:
    """(wall seconds, import seconds of forgetless.cli) of one `python -m forgetless.cli ARGS`, with
    the checkout ``root`` first on ``PYTHONPATH`` when given."""
    root = root or str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}
    start = time.perf_counter()  # run from ``root``: `python -m` puts the current folder first on sys.path
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "forgetless.cli", *args],
                          capture_output=True, text=True, check=True, env=env, cwd=root)
    wall = time.perf_counter() - start
    cumulative = [int(m.group(1)) for m in re.finditer(r"import time:\s+\d+ \|\s+(\d+) \| forgetless\.cli$",
                                                       done.stderr, re.MULTILINE)]
    return wall, (max(cumulative) / 1e6 if cumulative else float("nan"))


def quartiles(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return f"median {q[1]:.3f} s (IQR {q[0]:.3f}–{q[2]:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command (interleaved)")
    parser.add_argument("--against", help="another checkout to time side by side (interleaved)")
    args = parser.parse_args()
    trees = {"this": None, **({"against": args.against} if args.against else {})}
    results = {(tree, name): {"wall": [], "import": []} for name in COMMANDS for tree in trees}
    for root in trees.values():
        run_once(["--help"], root)  # warm the file cache
    load = os.getloadavg()
    for _ in range(args.repeats):
        for name, argv in COMMANDS.items():
            for tree, root in trees.items():
                wall, imported = run_once(argv, root)
                results[tree, name]["wall"].append(wall)
                results[tree, name]["import"].append(imported)
    print(f"load average before / after: {load[0]:.2f} / {os.getloadavg()[0]:.2f}")
    for (tree, name), r in results.items():
        print(f"{tree:8s} {name:44s} import {quartiles(r['import'])}; wall {quartiles(r['wall'])}; n={args.repeats}")
    if args.against:
        for name in COMMANDS:
            ratio = statistics.median(results["this", name]["wall"]) / statistics.median(results["against", name]["wall"])
            print(f"{name:44s} wall this / against: {ratio:.2f}")


if __name__ == "__main__":
    main()
