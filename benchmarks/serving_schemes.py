"""Every scheme's SmolLM2 folder served by vLLM (issue 55): the serving check and the served speed.

    python benchmarks/serving_schemes.py OUT [SCHEME ...]     # in an environment with vLLM (docs/shipping.md)

For each scheme (default: W4A16, W4A16-AWQ, W8A8-INT8, FP8-DYNAMIC, FP8, W8A16, and 2:4 — Wanda 2:4
zeros, saved dense; group size 64 where the scheme says 128; rtn in place of awq / gptq for W4A16-AWQ,
W8A8-INT8 and W8A16, the same format) the base (``--model smollm2``) is
compressed with ``forgetless.apply`` on 16 WikiText-2 texts and saved to ``OUT/<scheme>/model``; then,
scheme after scheme, ``serving.check.serve_check`` (vLLM's greedy answers against forgetless's) and,
for the folders vLLM served, ``serving.speed.served_speed`` (base and the folder in vLLM,
interleaved). Each step's result is written to ``OUT/results.json`` as it comes, and a rerun skips
what is there (resumable); the table is printed at the end (``--table`` prints it alone;
``--checks-only`` times nothing).
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

GROUP_SIZE = 64  # SmolLM2's widths (576 = 4·128 + 64) take no group of 128: the schemes' 128 becomes 64
# rtn writes the very format of gptq / awq for these (integer codes per row or group, zero points where
# asymmetric; no static input scale) in a fraction of their time on a shared 2-core machine: the serving
# check reads the format, not how the grid was chosen
RTN_INSTEAD = ("W4A16-AWQ", "W8A8-INT8", "W8A16")
FORMAT_FIELDS = ("bits", "group_size", "asymmetric", "weight_type", "activations")
SCHEMES = ("W4A16", "W4A16-AWQ", "W8A8-INT8", "FP8-DYNAMIC", "FP8", "W8A16", "2:4")
WIKITEXT = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "llm" / "wikitext2" / "wiki.test.raw"


def calibration_texts(count: int = 16) -> list[str]:
    """The first ``count`` WikiText-2 paragraphs of 200 characters or more (headings skipped)."""
    lines = [line.strip() for line in WIKITEXT.read_text(encoding="utf-8").splitlines()]
    return [line for line in lines if len(line) >= 200 and not line.startswith("=")][:count]


def scheme_stack(scheme: str) -> list:
    """The methods that write ``scheme``'s folder: the scheme's own, group size 64 for 128, rtn in place of
    gptq where the folder's format is the same (``RTN_INSTEAD``), Wanda 2:4 for ``2:4``."""
    from forgetless.registry import METHODS
    from forgetless.schemes import scheme_methods

    if scheme == "2:4":
        return [METHODS.make_config("wanda", {"pattern": "2:4"})]
    methods = [replace(m, group_size=GROUP_SIZE) if getattr(m, "group_size", 0) == 128 else m
               for m in scheme_methods(scheme)]
    if scheme in RTN_INSTEAD:
        methods = [METHODS.make_config("rtn", {f: getattr(m, f) for f in FORMAT_FIELDS})
                   if m.name in ("gptq", "awq") else m for m in methods]
    return methods


def make_folder(scheme: str, folder: Path) -> None:
    """SmolLM2 compressed with ``scheme`` (2:4: Wanda 2:4, no recovery) saved to ``folder``."""
    import forgetless
    from forgetless.models.loading import load_causal_lm

    model, tokenizer = load_causal_lm("smollm2")
    stack = scheme_stack(scheme)
    texts = calibration_texts() if any(m.name != "rtn" for m in stack) else None  # rtn reads no text
    model = forgetless.apply(model, stack, calibration=texts, tokenizer=tokenizer)
    forgetless.save_model(model, folder, tokenizer, metadata={"scheme": scheme})


def step(results: dict, key: str, out: Path, compute) -> dict:
    """``results[key]``, computed by ``compute()`` once and saved with the others (atomic)."""
    if key not in results:
        start = time.time()
        results[key] = {**compute(), "seconds": round(time.time() - start, 1),
                        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg()[0]}
        part = out / "results.json.part"
        part.write_text(json.dumps(results, indent=1))
        part.replace(out / "results.json")
    return results[key]


def run(out: Path, schemes: list[str], speeds: bool = True) -> dict:
    from forgetless.models.loading import resolve_model_path
    from forgetless.serving.check import serve_check
    from forgetless.serving.speed import served_speed

    out.mkdir(parents=True, exist_ok=True)
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else {}
    base = resolve_model_path("smollm2")
    step(results, "base check", out, lambda: serve_check(base))
    folders = {scheme: out / scheme.replace(":", "-") / "model" for scheme in schemes}
    for scheme, folder in folders.items():  # every folder, then every check, then the speeds (the slowest)
        if results.get(f"{scheme} folder", {}).get("made") and not folder.is_dir():
            del results[f"{scheme} folder"]  # written by an earlier run, since removed: written again
        step(results, f"{scheme} folder", out, lambda: _made(scheme, folder))
    made = {scheme: folder for scheme, folder in folders.items() if results[f"{scheme} folder"].get("made")}
    for scheme, folder in made.items():
        step(results, f"{scheme} check", out, lambda: serve_check(folder))
    for scheme, folder in made.items() if speeds else ():
        if results[f"{scheme} check"].get("served"):
            step(results, f"{scheme} speed", out, lambda: served_speed(base, folder))
    return results


def _made(scheme: str, folder: Path) -> dict:
    try:
        make_folder(scheme, folder)
    except Exception as exc:  # noqa: BLE001 - recorded in the table, the other schemes go on
        return {"made": False, "why": f"{type(exc).__name__}: {exc}"[:300]}
    return {"made": True, "path": str(folder)}


def table(results: dict, schemes: list[str]) -> list[str]:
    """One row per scheme: served or vLLM's reason, the check's verdict, tokens/s base vs scheme."""
    from forgetless.serving.compare import verdict

    lines = ["| scheme | vLLM check (8 prompts, 32 tokens) | tokens/s batch 1: base / scheme | "
             "tokens/s batch 16: base / scheme | time to first token (ms): base / scheme |", "|---|---|---:|---:|---:|"]
    for scheme in schemes:
        made, check, speed = (results.get(f"{scheme} {k}") for k in ("folder", "check", "speed"))
        if made and not made.get("made"):
            lines.append(f"| {scheme} | not written: {made['why']} | | | |")
            continue
        cells = ["", "", ""]
        if speed and speed.get("measured"):
            rows = {r["measure"]: r for r in speed["rows"]}
            names = ("generated tokens/s, batch 1", "generated tokens/s, batch 16", "time to first token, batch 1")
            cells = [f"{rows[n]['base']['median']:.1f} / {rows[n]['compressed']['median']:.1f} "
                     f"({rows[n]['speedup']['speedup']:.2f}×)" if n in rows else "" for n in names]
        elif speed:
            cells[0] = speed["why"][:200]
        elif check and check.get("served"):
            cells[0] = "not timed in this run"
        lines.append(f"| {scheme} | {verdict(check) if check else 'not run'} | " + " | ".join(cells) + " |")
    return lines


def kernels(results: dict, schemes: list[str]) -> list[str]:
    """Per scheme, the kernels vLLM's log named when it loaded the folder (the check's)."""
    lines = []
    for scheme in ["base", *schemes]:
        check = results.get(f"{scheme} check") or {}
        if check.get("kernels"):
            lines.append(f"- {scheme}: " + "; ".join(f"`{k}`" for k in check["kernels"]))
    return lines


def spread(results: dict, schemes: list[str]) -> list[str]:
    """Every served timing in full: each row's medians with min–max and the speedup interval."""
    lines = []
    for scheme in schemes:
        speed = results.get(f"{scheme} speed") or {}
        if speed.get("measured"):
            load = speed["load_average"]
            lines += ["", f"{scheme} against the base ({speed['date']}, load average {load['before'][0]:.1f} "
                          f"before, {load['after'][0]:.1f} after):", "", "| | base | scheme | speedup [95% interval] |",
                      "|---|---:|---:|---:|"]
            for row in speed["rows"]:
                cells = [f"{row[r]['median']:.1f} ({row[r]['min']:.1f}–{row[r]['max']:.1f})" for r in ("base", "compressed")]
                sp = row["speedup"]
                lines.append(f"| {row['measure']} ({row['unit']}) | {cells[0]} | {cells[1]} | {sp['speedup']:.2f}× "
                             f"[{sp['low']:.2f}, {sp['high']:.2f}] |")
    return lines


def arguments(doc: str, names, noun: str, flag: tuple[str, str], example: str, argv: list[str] | None = None):
    """The serving benchmarks' command line: OUT, ``noun``s from ``names`` (default: all), ``--table`` (print the
    table of OUT/results.json) and ``flag`` (its name and help); an unknown name or a missing results file is
    one error."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter,
                                     epilog=f"example: {example}")
    parser.add_argument("out", type=Path, help="the folder for the written folders and results.json")
    parser.add_argument("names", nargs="*", metavar=noun.upper(),
                        help=f"{noun}s to write and serve (default: all of " + ", ".join(names) + ")")
    parser.add_argument("--table", action="store_true", help="only print the table of OUT/results.json")
    parser.add_argument(flag[0], action="store_true", help=flag[1])
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in names]
    if unknown:
        parser.error(f"{unknown[0]}: not one of " + ", ".join(names))
    args.names = args.names or list(names)
    if args.table and not (args.out / "results.json").is_file():
        parser.error(f"--table: {args.out / 'results.json'} does not exist")
    return args


if __name__ == "__main__":
    args = arguments(__doc__, SCHEMES, "scheme", ("--checks-only", "the serving checks, no served speed"),
                     "python benchmarks/serving_schemes.py /tmp/served FP8 --checks-only")
    done = json.loads((args.out / "results.json").read_text()) if args.table else \
        run(args.out, args.names, speeds=not args.checks_only)
    print("\n".join(table(done, args.names) + ["", "Kernels vLLM named:", ""] + kernels(done, args.names)
                    + spread(done, args.names)))
