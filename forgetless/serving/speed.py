"""The served speed: a compressed folder and its base folder timed in vLLM side by side (``--speed``).

Both folders are loaded in one vLLM process and timed in turn, round by round (A, B, A, B), on the
same prompts of ``PROMPT_TOKENS`` random token ids (``worker.speed``): per batch size, generated
tokens per second of a ``generate`` decoding exactly ``NEW_TOKENS`` tokens per prompt; the time to
first token of one prompt. Each figure is the median of ``ROUNDS`` rounds with its spread (min–max)
and the speedup with its bootstrap interval (``metrics.intervals.speedup_interval``). The kernels are
vLLM's own (its log names them); this is what serving the folder gets on this machine, unlike
forgetless's in-process timing, which runs the dequantized weights in float32.
"""
from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

from ..metrics.intervals import speedup_interval
from ..progress import stage
from .engine import EAGER, run_vllm, vllm_missing, vllm_version

BATCH_SIZES = (1, 4, 16)
NEW_TOKENS = 32
PROMPT_TOKENS = 64
ROUNDS = 3
TIMEOUT_S = 1800


def not_served(why: str) -> dict:
    """The served-speed entry of a card whose folders were not timed in vLLM, and why."""
    return {"engine": vllm_version() or "vllm", "measured": False, "why": why}


def served_speed(base_folder: str | Path | None, compressed_folder: str | Path, *, dtype: str = "auto",
                 batch_sizes=BATCH_SIZES, new_tokens: int = NEW_TOKENS, prompt_tokens: int = PROMPT_TOKENS,
                 rounds: int = ROUNDS, timeout_s: float = TIMEOUT_S) -> dict:
    """Base and compressed folders timed in vLLM (module docstring); ``measured`` False with ``why``
    when vLLM is missing, the base has no folder, or vLLM refuses a folder (its reason)."""
    missing = vllm_missing()
    if missing:
        return not_served(f"{missing}; the rest of the card stands without it")
    if base_folder is None or not Path(base_folder).is_dir():
        return not_served("the base has no model folder on disk to serve (a model object given in Python)")
    stage(f"speed: base and compressed served in vLLM, batch sizes {', '.join(map(str, batch_sizes))}, "
          f"{rounds} interleaved rounds")
    before = list(os.getloadavg())
    result = run_vllm({"task": "speed", "models": {"base": str(base_folder), "compressed": str(compressed_folder)},
                       "dtype": dtype, "batch_sizes": list(batch_sizes), "new_tokens": new_tokens,
                       "prompt_tokens": prompt_tokens, "rounds": rounds,
                       "max_model_len": prompt_tokens + new_tokens, "max_num_seqs": max(batch_sizes),
                       "enforce_eager": EAGER}, timeout_s)
    if "error" in result:
        return not_served(f"vLLM did not serve both folders: {result['error']}")
    return {"engine": vllm_version(), "measured": True, "eager": EAGER, "dtype": dtype, "new_tokens": new_tokens,
            "prompt_tokens": prompt_tokens, "rounds": rounds, "kernels": result["log"]["kernels"],
            "rows": speed_rows(result["times_s"], new_tokens),
            "load_average": {"before": before, "after": list(os.getloadavg())}}


def served_for_card(speed: dict, kind, base_folder: str | None, folder: Path) -> dict | None:
    """The card's served speed of a run (``speed``: the run's in-process speed entry; ``kind``: its model
    kind): None for a model vLLM does not serve (``kind.served``: a causal LM) or under ``--speed none``;
    under ``--speed auto`` a folder whose computation vLLM runs as the base's (zeros in dense weights) is
    not served, and the card says why; else both folders timed in vLLM (``served_speed``), or why not."""
    if not kind.served or speed.get("setting") == "none":
        return None
    if speed.get("setting") == "auto" and not speed.get("meaningful") and not quantized_folder(folder):
        return not_served("the folder's weights are dense: vLLM runs the base's kernels on them, no speedup "
                          "expected (--speed full serves them anyway)")
    return served_speed(base_folder, folder)


def quantized_folder(folder: Path) -> bool:
    """Whether ``config.json`` of ``folder`` declares a quantization (compressed-tensors' scheme)."""
    try:
        return bool(json.loads((Path(folder) / "config.json").read_text()).get("quantization_config"))
    except (OSError, ValueError):
        return False


def speed_rows(times: dict, new_tokens: int) -> list[dict]:
    """The table of a served timing: the time to first token (ms) and, per batch size, generated tokens
    per second; each with both medians, their min–max spread and the speedup with its interval."""
    rows = []
    for name, by_role in times.items():
        base, comp = by_role["base"], by_role["compressed"]
        if name == "ttft":
            row = {"measure": "time to first token, batch 1", "unit": "ms",
                   **{role: _spread([1e3 * t for t in ts]) for role, ts in by_role.items()}}
        else:
            batch = int(name.split()[-1])
            row = {"measure": f"generated tokens/s, batch {batch}", "unit": "tokens/s", "batch": batch,
                   **{role: _spread([batch * new_tokens / t for t in ts]) for role, ts in by_role.items()}}
        rows.append({**row, "speedup": speedup_interval(base, comp)})
    return rows


def _spread(values: list[float]) -> dict:
    """Median and range of one engine's rounds."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def served_markdown(served: dict | None) -> list[str]:
    """The card's "Served in vLLM" lines: the table, the engine and kernels, or the one line why not."""
    if not served:
        return []
    lines = ["", "### Served in vLLM", ""]
    if not served.get("measured"):
        return lines + [f"Not measured: {served['why']}."]
    lines += ["| | base | compressed | speedup [95% interval] |", "|---|---:|---:|---:|"]
    for row in served["rows"]:
        s = row["speedup"]
        cells = [f"{row[role]['median']:.1f} ({row[role]['min']:.1f}–{row[role]['max']:.1f})"
                 for role in ("base", "compressed")]
        ratio = f"{s['speedup']:.2f}× [{s['low']:.2f}, {s['high']:.2f}]" + ("" if s["measurable"] else " not measurable")
        lines.append(f"| {row['measure']} ({row['unit']}) | {cells[0]} | {cells[1]} | {ratio} |")
    load = served["load_average"]
    lines += ["", f"{served['engine']} ({'eager, torch.compile off' if served.get('eager') else 'compiled'}), "
                  f"dtype {served['dtype']}, prompts of {served['prompt_tokens']} tokens, "
                  f"{served['new_tokens']} generated tokens each; median (min–max) of {served['rounds']} interleaved "
                  f"rounds after one warm-up; load average {load['before'][0]:.1f} before, {load['after'][0]:.1f} after. "
                  "A speedup above 1 is faster than the base."]
    if served["kernels"]:
        lines += ["", "Kernels vLLM reported: " + "; ".join(f"`{k}`" for k in served["kernels"]) + "."]
    return lines
