"""Issue 52's speed goal on SmolLM2-135M: a bit budget's sensitivity pass and allocation
(``methods/_shared/budget.py`` at the default settings: blocks, ``W4A16-g128,W4A16-g64,W8A16,kept``, 8
calibration texts of 128 tokens) against one GPTQ run of the whole model (W4A16, groups of 64, the default 128
calibration texts of 128 tokens), both on XSum calibration texts, one thread; and the allocation alone at the
largest unit count (every linear layer: 210 units, SmolLM2's real bytes per format, seeded random KL).

    python benchmarks/budget_smollm2.py --data-dir ../shared/data --budget 5 --out runs/budget-bench.jsonl

``--rounds`` rounds (default 2) of the pass and the GPTQ run, interleaved, the order flipping each round (pass
first, then GPTQ first), so a change in the machine's load falls on both. One JSON line per measurement
(seconds, the machine's 1-minute load at its end), appended to ``--out`` as it goes; a rerun skips what
``--out`` holds. Last, the ratio pass / GPTQ of each round.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace


def record(out: Path, **entry) -> dict:
    line = json.dumps({**entry, "load": os.getloadavg()[0]})
    print(line, flush=True)
    with out.open("a") as handle:
        handle.write(line + "\n")
    return json.loads(line)


def recorded(out: Path) -> dict:
    """The measurements already in ``out`` by (round, step): a rerun after a kill skips them."""
    if not out.exists():
        return {}
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {(row.get("round"), row["step"]): row for row in rows}


def budget_pass(model, ctx, budget: float) -> dict:
    """The budget's sensitivity pass and allocation at the default settings (blocks, default formats)."""
    from forgetless.methods._shared.budget import plan_budget
    from forgetless.registry import METHODS

    start = time.perf_counter()
    section = plan_budget(model, ctx, METHODS.make_config("gptq", {"bits_budget": budget})).section
    wall = time.perf_counter() - start
    counts: dict[str, int] = {}
    for row in section["assignment"]:
        counts[row["format"]] = counts.get(row["format"], 0) + 1
    return dict(seconds=round(wall, 2), sensitivity_seconds=section["seconds_sensitivity"],
                allocation_ms=1000 * section["seconds_allocation"], units=len(section["assignment"]),
                bits_per_weight=section["bits_per_weight"], formats=counts, feasible=section["feasible"])


def gptq_run(model, ctx) -> dict:
    """One GPTQ run of the whole model (W4A16, groups of 64, its default calibration) on a copy."""
    from forgetless.methods._shared.calibration import calibration_batches
    from forgetless.registry import METHODS

    gptq = METHODS.build(METHODS.make_config("gptq", {"group_size": 64}))
    quantized = copy.deepcopy(model)
    start = time.perf_counter()
    gptq.calibrate(quantized, calibration_batches(ctx, gptq.config))
    return dict(seconds=round(time.perf_counter() - start, 2))


def allocation_alone(budget: float, model) -> dict:
    """The allocation at the largest unit count (every linear), SmolLM2's bytes, seeded random KL."""
    import torch

    from forgetless.methods._shared.allocation import allocate
    from forgetless.methods._shared.budget import sized
    from forgetless.registry import METHODS

    linears = METHODS.make_config("gptq", {"bits_budget": budget, "sensitivity": "linears"})
    units, chosen, costs, _, _ = sized(linears, model)
    generator = torch.Generator().manual_seed(0)
    values = [[0.0 if c.kept else float(torch.rand(1, generator=generator)) for c in chosen] for _ in units]
    start = time.perf_counter()
    allocate(costs, values, int(budget * sum(u.weights for u in units) / 8))
    return dict(units=len(units), allocation_ms=1000 * (time.perf_counter() - start))


PASS, GPTQ = "budget pass + allocation (blocks)", "one gptq run (W4A16 g64, 128 texts x 128 tokens)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--budget", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of (pass, GPTQ), the order flipping each round")
    parser.add_argument("--out", type=Path, default=Path("runs/budget-bench.jsonl"))
    parser.add_argument("--skip-gptq", action="store_true", help="measure the budget's pass only")
    args = parser.parse_args()

    import torch

    from forgetless.methods._shared.calibration import calibration_texts
    from forgetless.models.loading import load_causal_lm

    torch.set_num_threads(1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    done = recorded(args.out)
    model, tokenizer = load_causal_lm("smollm2")
    model.eval()
    ctx = SimpleNamespace(notes=[], calibration=calibration_texts("xsum", args.data_dir), tokenizer=tokenizer,
                          kind=None, task=None, seed=0)
    steps = {PASS: lambda: budget_pass(model, ctx, args.budget), GPTQ: lambda: gptq_run(model, ctx)}
    if args.skip_gptq:
        del steps[GPTQ]
    for round_ in range(args.rounds):
        for step in (list(steps) if round_ % 2 == 0 else list(steps)[::-1]):
            if (round_, step) not in done:
                done[round_, step] = record(args.out, round=round_, step=step, **steps[step]())
    if (None, "allocation alone (linears)") not in done:
        record(args.out, step="allocation alone (linears)", **allocation_alone(args.budget, model))
    if not args.skip_gptq:
        ratios = [done[r, PASS]["seconds"] / done[r, GPTQ]["seconds"] for r in range(args.rounds)]
        print(json.dumps({"pass / gptq per round": [round(x, 2) for x in ratios],
                          "loads": [[done[r, s]["load"] for s in steps] for r in range(args.rounds)]}))


if __name__ == "__main__":
    main()
