"""The emulated fp8 inputs of FP8-DYNAMIC (``quantization/inputs.py``: per-token scale, cast to
float8_e4m3fn and back, on every Linear's input but ``lm_head``) against the same SmolLM2 forward without them,
CPU time, the two alternating in one process (``--rounds`` rounds of ``--forwards`` forwards each; the
smallest round of each is compared).

    python benchmarks/fp8_forward.py --shape 64x8 --threads 1     # suffix-sized rows (shared-context scoring)
    python benchmarks/fp8_forward.py --shape 8x128 --threads 1    # whole prompts
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def cpu_per_forward(model, ids: torch.Tensor, forwards: int) -> float:
    with torch.inference_mode():
        model(ids[:, :4])
        start = time.process_time()
        for _ in range(forwards):
            model(ids)
        return (time.process_time() - start) / forwards


def main() -> None:
    from forgetless.quantization.inputs import InputQuant, quantize_inputs
    from forgetless.models.loading import load_causal_lm

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="64x8", help="rows x tokens of a forward")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forwards", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _ = load_causal_lm("smollm2")
    rows, tokens = map(int, args.shape.split("x"))
    ids = torch.randint(0, model.config.vocab_size, (rows, tokens), generator=torch.Generator().manual_seed(0))
    linears = [m for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and "lm_head" not in name]
    seconds = {"fp32": [], "fp8 inputs": []}
    for _ in range(args.rounds):
        for linear in linears:
            quantize_inputs(linear, None)
        seconds["fp32"].append(cpu_per_forward(model, ids, args.forwards))
        for linear in linears:
            quantize_inputs(linear, InputQuant("float", "token"))
        seconds["fp8 inputs"].append(cpu_per_forward(model, ids, args.forwards))
    for name, values in seconds.items():
        print(f"{name}: CPU s per forward {', '.join(f'{v:.3f}' for v in values)}")
    print(f"fp8 inputs / fp32: {min(seconds['fp8 inputs']) / min(seconds['fp32']):.2f}x "
          f"({args.shape}, {args.threads} thread(s))")


if __name__ == "__main__":
    main()
