"""Versions, hardware and time, recorded in every report."""
from __future__ import annotations

import datetime as dt
import os
import platform


def environment(device: str | None = None) -> dict:
    """Versions, hardware (with ``device``: the one the run worked on, ``--device`` resolved) and the time."""
    import torch  # here, not at the top: re-rendering a saved card (`forgetless report`) imports no torch
    import transformers
    from importlib.metadata import PackageNotFoundError, version

    def v(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    return {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "versions": {"forgetless": v("forgetless"), "python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "accelerate": v("accelerate"),
                     "datasets": v("datasets")},
        "hardware": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                     "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                     "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
                     **({"device": device} if device else {})},
    }
