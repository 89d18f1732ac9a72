"""``forgetless serve-check FOLDER``: the folder served by vLLM against forgetless's own model of it
(``serving/check.py``); one line per prompt and a verdict, or ``--json``. Exit code 0 when vLLM served
the folder and every answer is identical, 1 when vLLM served it but answers differ or vLLM could not
serve it (its reason printed), 2 for bad input."""
from __future__ import annotations

import json

from pathlib import Path

from ..errors import DataError, ForgetlessError
from ..models.checks import check_model_folder
from ..models.loading import resolve_model_path
from ..serving.check import PROMPTS, check_serve_options, serve_check
from ..serving.compare import verdict
from ..serving.engine import vllm_missing


def cmd_serve_check(args, config) -> int:
    prompts = check_serve_options(args.max_new_tokens, args.timeout, _read_prompts(args.prompts) if args.prompts
                                  else PROMPTS)
    folder = resolve_model_path(args.model_path)  # an offline LLM's name (smollm2) is its converted folder
    check_model_folder(folder)
    missing = vllm_missing()
    if missing:  # the command's whole point: one line, how to get it
        raise ForgetlessError(f"serve-check {args.model_path}: {missing}")
    result = serve_check(folder, prompts, max_new_tokens=args.max_new_tokens, dtype=args.dtype,
                         timeout_s=args.timeout)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for line in report_lines(result):
            print(line)
    return 0 if result["served"] and result["summary"]["identical"] == result["summary"]["prompts"] else 1


def _read_prompts(path: str) -> list[str]:
    """``--prompts FILE``: one prompt a line (blank lines skipped)."""
    from ..data.texts import read_texts

    if not Path(path).is_file():
        raise DataError(f"--prompts {path}: no such file; give a text file, one prompt a line")
    return read_texts(path)


def report_lines(result: dict) -> list[str]:
    """The printout: per prompt identical or where it parted (both tokens, both gaps), then the verdict."""
    lines = [f"{result['folder']}: {result['engine'] or 'vLLM'} (dtype {result['dtype']}) against forgetless, "
             f"greedy, up to {result['max_new_tokens']} new tokens"]
    for entry in result.get("answers", []):
        if entry["identical"]:
            lines.append(f"  identical  {entry['prompt']!r} → {entry['ours']!r}")
            continue
        d = entry["first_difference"]
        gap = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
        token = lambda t: "(ended)" if t is None else repr(t["text"])  # noqa: E731
        lines.append(f"  differs    {entry['prompt']!r} at token {d['position']} after {d['common_prefix']!r}: "
                     f"forgetless {token(d['ours'])}, vLLM {token(d['served'])}; gap forgetless {gap(d['gap_ours'])} "
                     f"nats, vLLM {gap(d['gap_served'])} nats" + (" (near tie)" if d["near_tie"] else ""))
    if result.get("kernels"):
        lines.append("  kernels: " + "; ".join(result["kernels"]))
    lines.append(verdict(result))
    return lines
