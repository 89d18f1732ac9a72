"""The arguments of the Python API (``forgetless.apply``, streamed ``apply``, ``compress``,
``evaluate``), checked as the command line checks its flags, before any work:

* a value that is an option of the config tree goes through that option's own check
  (``options.check_field``: ``seed`` a whole number in 0..2^32-1 as ``--seed``, ``batch_size`` ≥ 1 as
  ``--eval-batch-size``, ``model_kind`` one of ``--model-kind``'s choices), named as Python names it;
* a device is one torch knows and this machine has (``check_device``; ``--device`` too): ``"tpu9"``
  or ``"cuda"`` on a CPU-only torch is one line, not a ``RuntimeError`` from the first tensor moved;
* an output folder follows the command line's rule (``outputs.check_output``: never an input,
  never a folder of files forgetless did not write);
* a list of methods follows ``--then``'s rule (``validate.check_chain``: the quantizing one last).

Every problem is one ``ForgetlessError`` naming the argument (``errors.py``).
"""
from __future__ import annotations

import dataclasses

from .config import EvalConfig, RunConfig, TrainConfig
from .errors import OptionError
from .options import check_field

# Python argument → the config field whose check it takes
FIELDS = {"seed": (RunConfig, "seed"), "batch_size": (EvalConfig, "batch_size"),
          "max_length": (TrainConfig, "max_length"), "model_kind": (RunConfig, "model_kind")}


def check_arguments(**values) -> None:
    """Each ``name=value`` as the config field of ``FIELDS`` checks it (type, range, choices); a flag
    argument (``overwrite``) is True or False."""
    for name, value in values.items():
        flag = "--" + name.replace("_", "-")  # the message speaks flags; read from Python: name=value
        if name == "overwrite":
            if not isinstance(value, bool):
                raise OptionError(f"overwrite={value!r}: expected True or False")
            continue
        cls, field_name = FIELDS[name]
        field = next(f for f in dataclasses.fields(cls) if f.name == field_name)
        if value is None or isinstance(value, bool) or (field.type in ("int", int) and not isinstance(value, int)):
            raise OptionError(f"{flag} {value!r}: expected {_kind(field)}")
        check_field(cls, field, value, flag=flag)


def _kind(field) -> str:
    choices = field.metadata.get("choices")
    if choices:
        return f"one of {', '.join(choices)}"
    low, high = field.metadata.get("low"), field.metadata.get("high")
    return f"a whole number in {low}..{high}" if high is not None else f"a whole number >= {low}"


def run_device(device: str, flag: str = "--device") -> str:
    """The device a run works on for ``--device device``: ``auto`` is a CUDA GPU when torch has one, else the
    CPU; any other name is checked (``check_device``) and kept. Training, calibration, scoring, generation and
    the speed check all run there (the models are moved to it; every input follows its model)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    check_device(device, flag)
    return str(device)


def check_device(device, flag: str = "--device") -> None:
    """``device`` is one torch knows and this machine has: ``cpu``, ``cuda`` / ``cuda:N`` with a CUDA
    GPU (N below the GPU count), ``mps`` / ``xpu`` where torch has them; one ``OptionError`` otherwise."""
    import torch

    if not isinstance(device, (str, torch.device)):
        raise OptionError(f"{flag} {device!r}: expected a device name such as cpu or cuda, got {type(device).__name__}")
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise OptionError(f"{flag} {device}: not a device torch knows; give cpu, cuda or cuda:N") from None
    if parsed.type == "cpu":
        return
    available = {"cuda": torch.cuda.is_available, "mps": lambda: torch.backends.mps.is_available(),
                 "xpu": lambda: hasattr(torch, "xpu") and torch.xpu.is_available()}.get(parsed.type)
    if available is None or not available():
        why = "torch is built without CUDA" if parsed.type == "cuda" and torch.version.cuda is None else \
            f"no {parsed.type} device is available here"
        raise OptionError(f"{flag} {device}: {why} (torch {torch.__version__}); use cpu")
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise OptionError(f"{flag} {device}: this machine has {torch.cuda.device_count()} CUDA GPU(s) "
                          f"(cuda:0..cuda:{torch.cuda.device_count() - 1})")
