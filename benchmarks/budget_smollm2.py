"""Issue 52's speed goal on SmolLM2-135M: a bit budget's sensitivity pass and allocation
(``methods/_shared/budget.py`` at the default settings: blocks, ``W4A16-g128,W4A16-g64,W8A16,kept``, 8
calibration texts of 128 tokens) against one GPTQ run of the whole model (W4A16, groups of 64, the default 128
calibration texts of 128 tokens), both on XSum calibration texts, one thread; and the allocation alone at the
largest unit count (every linear layer: 210 units, SmolLM2's real bytes per format, seeded random KL).

    python benchmarks/budget_smollm2.py --data-dir ../shared/data --budget 5 --out runs/budget-bench.jsonl

One JSON line per measurement (seconds, the machine's 1-minute load), appended to ``--out`` as it goes.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace


def record(out: Path, **entry) -> None:
    line = json.dumps({**entry, "load": os.getloadavg()[0]})
    print(line, flush=True)
    with out.open("a") as handle:
        handle.write(line + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--budget", type=float, default=5.0)
    parser.add_argument("--out", type=Path, default=Path("runs/budget-bench.jsonl"))
    parser.add_argument("--skip-gptq", action="store_true", help="measure the budget's pass only")
    args = parser.parse_args()

    import torch

    from forgetless.methods._shared.calibration import calibration_batches, calibration_texts
    from forgetless.methods._shared.allocation import allocate
    from forgetless.methods._shared.budget import plan_budget, sized
    from forgetless.models.loading import load_causal_lm
    from forgetless.registry import METHODS

    torch.set_num_threads(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model, tokenizer = load_causal_lm("smollm2")
    model.eval()
    ctx = SimpleNamespace(notes=[], calibration=calibration_texts("xsum", args.data_dir), tokenizer=tokenizer,
                          kind=None, task=None, seed=0)

    config = METHODS.make_config("gptq", {"bits_budget": args.budget})
    start = time.perf_counter()
    plan = plan_budget(model, ctx, config)
    wall = time.perf_counter() - start
    section = plan.section
    counts: dict[str, int] = {}
    for row in section["assignment"]:
        counts[row["format"]] = counts.get(row["format"], 0) + 1
    record(args.out, step="budget pass + allocation (blocks)", seconds=round(wall, 2),
           sensitivity_seconds=section["seconds_sensitivity"], allocation_ms=1000 * section["seconds_allocation"],
           units=len(section["assignment"]), bits_per_weight=section["bits_per_weight"], formats=counts,
           feasible=section["feasible"])

    linears = METHODS.make_config("gptq", {"bits_budget": args.budget, "sensitivity": "linears"})
    units, chosen, costs, low, high = sized(linears, model)
    generator = torch.Generator().manual_seed(0)
    values = [[0.0 if c.kept else float(torch.rand(1, generator=generator)) for c in chosen] for _ in units]
    budget = int(args.budget * sum(u.weights for u in units) / 8)
    start = time.perf_counter()
    allocate(costs, values, budget)
    record(args.out, step="allocation alone (linears)", units=len(units),
           allocation_ms=1000 * (time.perf_counter() - start))

    if args.skip_gptq:
        return
    gptq = METHODS.build(METHODS.make_config("gptq", {"group_size": 64}))
    quantized = copy.deepcopy(model)
    start = time.perf_counter()
    batches = calibration_batches(ctx, gptq.config)
    gptq.calibrate(quantized, batches)
    record(args.out, step="one gptq run (W4A16 g64, 128 texts x 128 tokens)",
           seconds=round(time.perf_counter() - start, 2))


if __name__ == "__main__":
    main()
