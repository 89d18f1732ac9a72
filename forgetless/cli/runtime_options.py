"""CLI options for deployment: methods stacked after the main one (``--then``, ``RunConfig.then``)
and the runtime the compressed model is evaluated and timed under (``--runtime``,
``EvalConfig.runtime``). See ``methods/then.py`` and ``evaluate/runtime.py``."""
from __future__ import annotations

import argparse

RUNTIMES = ("torch", "torch-bf16", "onnxruntime")  # checked by evaluate/runtime.py (no torch import at --help)


def add_runtime_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("deployment: stacking and runtime")
    g.add_argument("--then", action="append", default=[], metavar="METHOD[:OPTION=VALUE,...]",
                   help="a method applied after --method (repeatable, in order), with that method's own options, "
                        "e.g. --method heads --then quantize:dtype=int8")
    g.add_argument("--runtime", default="torch", help=f"the compressed model is evaluated and timed under: "
                                                      f"{' | '.join(RUNTIMES)} (the base always in fp32 PyTorch); "
                                                      "onnxruntime and torch-bf16: classifiers only")
