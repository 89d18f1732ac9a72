"""``forgetless compare OUT1 OUT2 [...] --out DIR``: one side-by-side page of several runs of one
task (``compare.md``, ``compare.html`` with its plot embedded, ``pareto.png``): per run the method and
the options that set it apart, size, measured speedup (bootstrap interval), dev and pooled challenge
accuracy (bootstrap intervals), F_bias (Du et al. 2023, eq. 1; paired bootstrap interval; marked
meaningless where the run's warnings say so), hard / easy accuracy, and each run's warnings. Runs of
an LLM suite (task kind ``lm-eval``) add a table of the change per lm-eval task, the pooled flips and
KL, WikiText-2 perplexity, the generation tasks' metrics and the divergence along the base's own answers
side by side (``llm_generation.generation_compare``), and ``llm.png``: mean accuracy and perplexity against size, stored bits
per parameter and the sparsity pruning made. An LLM suite's runs have no classifier columns (dev,
challenge, F_bias, hard / easy): their mean accuracy over the tasks above chance instead. Size is on
disk against the base's float32 folder (``headline.size_numbers``: a quantized model keeps its
parameter count); sparsity is only what a pruning method zeroed.

Runs are aligned on their common evaluation sets: a set is the same when the task, the set name
and its size match. Runs with no common set are refused before anything is written. DIR follows
the output rule (``outputs.py``): not a run folder, not a parent of one, not overwritten without
``--overwrite``.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import ConfigError
from ..fsutil import atomic_write_text
from ..outputs import check_output, mark_output, output_lock
from .card_types import Card
from .headline import (delta_points, delta_text, estimate_text, headline_numbers, megabytes, num, scale_of,
                       set_estimates, speedup_text, verdict)
from .llm_generation import generation_compare
from .llm_markdown import kl_basis
from .html import render_html
from .inert import inert
from .naming import card_chain
from .pareto import pareto_plot
from .plots import llm_compare_plot
from .rerender import read_card


def set_ids(card: Card) -> list[tuple]:
    """``(task, set, n)`` of every evaluation set of a card, in card order."""
    return [(card.task.name, name, entry.base["n"]) for name, entry in card.sets.items()]


def common_sets(cards: dict[str, Card]) -> list[str]:
    """Names of the sets every run has (same task, name and size), in the first run's order; a
    ``ConfigError`` naming two runs that share none."""
    names = list(cards)
    first = set_ids(cards[names[0]])
    common = [s for s in first if all(s in set_ids(c) for c in cards.values())]
    if not common:
        other = next((n for n in names[1:] if not set(first) & set(set_ids(cards[n]))), None)
        if other is None:  # each run shares a set with the first, but no set is in all of them
            raise ConfigError(f"compare: the runs {', '.join(names)} have no evaluation set in common (same task, "
                              "set and size); compare runs of one task")
        raise ConfigError(f"compare: {names[0]} (task {cards[names[0]].task.name}) and {other} (task "
                          f"{cards[other].task.name}) share no evaluation set (same task, set and size); "
                          "compare runs of one task")
    return [name for _, name, _ in common]


def key_options(card: Card) -> str:
    """The method's options that differ from their defaults, the objective when not the method's
    default, and the methods applied after it: ``ratio=0.3, then quantize(dtype=int8)``."""
    from ..options import default_of
    from ..registry import METHODS

    def config_class(name: str):
        try:
            return METHODS.config_class(name)
        except Exception:  # noqa: BLE001 - a plugin method not installed here: show every option
            return None

    def changed(name: str, config: dict) -> list[str]:
        cls = config_class(name)
        defaults = {f.name: default_of(f) for f in dataclasses.fields(cls)} if cls else {}
        return [f"{k}={v}" for k, v in config.items() if k not in defaults or _norm(defaults[k]) != _norm(v)]

    method, *then = card.method.chain()
    parts = changed(method.name, method.config)
    if card.method.objective != getattr(config_class(method.name), "default_objective", None):
        parts.append(f"objective {card.method.objective}")
    parts += [f"then {t.name}({', '.join(changed(t.name, t.config))})" for t in then]
    return ", ".join(parts) or "defaults"


def _norm(value):
    return list(value) if isinstance(value, (list, tuple)) else value


def _with_delta(entry: dict | None, scale: float, paired: dict | None = None) -> str:
    """``76.9 [71.9, 81.9] (-3.1)``; with the change's paired interval ``(-3.1 [-5.0, -1.2])``, "not
    measurable" when it includes 0."""
    points = delta_points(entry, scale)
    change = delta_text(paired, scale) if paired and paired.get("low") is not None else (
        "" if points is None else f"{points:+.1f}")
    return estimate_text((entry or {}).get("compressed"), scale) + (f" ({change})" if change else "")


def _f_bias(f: dict | None) -> str:
    text = estimate_text(f, 1, ".2f")
    return text if not f or f["meaningful"] else f"{text} not meaningful"


def _speed(s: dict) -> str:
    if not s["timed"]:
        return "not timed"
    return speedup_text(s["value"], s, s["meaningful"])


def render_compare(cards: dict[str, Card], sets: list[str], plot: str | None = None) -> str:
    """The Markdown page: headline table (one row per run, bases below), accuracy per common set (an
    LLM suite: the change per lm-eval task, flips, KL, perplexity), verdicts and warnings per run."""
    numbers = {name: headline_numbers(card) for name, card in cards.items()}
    first = next(iter(cards.values()))
    llm = all(card.llm for card in cards.values())
    lines = [f"# forgetless compare: {first.task.name}, {len(cards)} runs", "",
             *(_llm_tables(cards, numbers) if llm else _classifier_tables(cards, numbers, sets))]
    if plot:
        lines += ["", f"![{plot}]({plot})"]
    if llm:
        lines += llm_compare(cards, sets)
    lines += ["", "## Verdicts", ""]
    lines += [f"- **{name}** ({card_chain(card)}): {verdict(card, numbers[name])}." for name, card in cards.items()]
    fired: dict[str, list[str]] = {}
    for name in cards:
        for warning in numbers[name]["warnings"]:
            fired.setdefault(warning, []).append(name)
    if fired:
        lines += ["", "## ⚠ Warnings", ""] + [f"- {w} — {', '.join(runs)}" for w, runs in fired.items()]
    lines += ["", "Runs: " + "; ".join(f"{name} = `{card.command or card.method.name}`"
                                        for name, card in cards.items())]
    return inert("\n".join(lines) + "\n")  # folder, set and task names stay text (report/inert.py)


SIZE_CAPTION = ("size: the compressed model against its base — bytes on disk of its folder against the base's float32 "
                "folder where both were saved, else its stored weights against the base's float32 weights, else "
                "parameters; sparsity: the zeros a pruning method of the chain made (none for a model only quantized: "
                "the zeros of a quantization grid are not sparsity)")


def _size_cells(n: dict) -> str:
    size = n["size"]
    sparsity = "–" if size.get("sparsity") is None else f"{100 * size['sparsity']:.1f}%"
    unit = " (parameters)" if size["what"] == "the base parameters" else ""
    return f"{size['ratio']:.2f}×{unit} | {sparsity}"


def _runs_by_base(numbers: dict) -> list[list[str]]:
    """The runs of each base model (same parameters, dev or mean accuracy, pooled challenge accuracy): one
    row each in the table of base models."""
    bases: dict[tuple, list[str]] = {}
    for name, n in numbers.items():
        key = (n["params"]["base"], n["dev"]["base"]["value"], (n["challenge"] or {}).get("base", {}).get("value"))
        bases.setdefault(key, []).append(name)
    return list(bases.values())


def _classifier_tables(cards: dict[str, Card], numbers: dict, sets: list[str]) -> list[str]:
    """Headline table, base models and accuracy per common set of classification / generation runs."""
    first = next(iter(cards.values()))
    metric = first.task.metric
    scale = scale_of(metric)
    pooled = " + ".join(next(iter(numbers.values()))["challenge_sets"]) or "challenge"
    lines = [f"Compressed models ({metric} in %, [95% bootstrap interval], (Δ points vs the run's own base)); "
             f"speedup: measured throughput, [95% interval of the ratio of medians]; {SIZE_CAPTION}.", "",
             f"| run | method | key options | size | sparsity | speedup | dev | {pooled} | F_bias | hard | easy | "
             "warnings |", "|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, card in cards.items():
        n = numbers[name]
        lines.append(f"| {name} | {card_chain(card)} | {key_options(card)} | {_size_cells(n)} | "
                     f"{_speed(n['speedup'])} | {_with_delta(n['dev'], scale, n['deltas']['dev'])} | "
                     f"{_with_delta(n['challenge'], 100, n['deltas']['challenge'])} | "
                     f"{_f_bias(n['f_bias'])} | {_with_delta(n['hard'], 100)} | {_with_delta(n['easy'], 100)} | "
                     f"{len(n['warnings'])} |")
    lines += ["", "| base model of | parameters | dev | " + pooled + " | hard | easy |", "|:---|---:|---:|---:|---:|---:|"]
    for runs in _runs_by_base(numbers):
        n = numbers[runs[0]]
        cells = [estimate_text((n[part] or {}).get("base"), scale if part == "dev" else 100)
                 for part in ("dev", "challenge", "hard", "easy")]
        lines.append(f"| {', '.join(runs)} | {n['params']['base']:,} | " + " | ".join(cells) + " |")
    lines += ["", f"## {metric} per evaluation set (compressed; %)", "",
              "| set | n | " + " | ".join(cards) + " |", "|---|---:|" + "---:|" * len(cards)]
    for set_name in sets:
        cells = [estimate_text(set_estimates(card)[set_name]["compressed"], scale) for card in cards.values()]
        lines.append(f"| {set_name} | {first.sets[set_name].base['n']} | " + " | ".join(cells) + " |")
    others = sorted({s for card in cards.values() for s in card.sets} - set(sets))
    if others:
        lines += ["", f"Sets not shared by every run (left out): {', '.join(others)}."]
    return lines


def _llm_tables(cards: dict[str, Card], numbers: dict) -> list[str]:
    """Headline table and base models of LLM-suite runs: size, speed and the mean accuracy of the tasks
    above chance with the paired interval of its change (no classifier columns: an LLM suite has no dev,
    challenge set, F_bias or labelled hard / easy split)."""
    lines = ["Compressed models: the mean accuracy of the LLM tasks above chance for the run's base (%, [95% "
             "bootstrap interval]) and its change, compressed − base, in points with the paired interval (\"not "
             "measurable\" where it includes 0); speedup: measured throughput; " + SIZE_CAPTION + ".", "",
             "| run | method | key options | size | sparsity | bits / parameter | speedup | mean accuracy | Δ pts | "
             "warnings |", "|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, card in cards.items():
        n = numbers[name]
        bits = (((card.params.stored or {}).get("overall") or {}).get("bits_per_parameter")
                or card.params.compressed.get("bits_per_parameter"))
        lines.append(f"| {name} | {card_chain(card)} | {key_options(card)} | {_size_cells(n)} | "
                     f"{num(bits)} | {_speed(n['speedup'])} | "
                     f"{estimate_text(n['dev']['compressed'])} | {delta_text(n['deltas']['dev'])} | "
                     f"{len(n['warnings'])} |")
    lines += ["", "| base model of | parameters | on disk | mean accuracy | tasks above chance |",
              "|:---|---:|---:|---:|---|"]
    for runs in _runs_by_base(numbers):
        n, card = numbers[runs[0]], cards[runs[0]]
        tasks = ", ".join(card.llm.headline_tasks) or "none"
        lines.append(f"| {', '.join(runs)} | {n['params']['base']:,} | {megabytes(n['size']['base_bytes'])} | "
                     f"{estimate_text(n['dev']['base'])} | {tasks} |")
    return lines


def llm_compare(cards: dict[str, Card], sets: list[str]) -> list[str]:
    """LLM suites: per run the change of each common multiple-choice task (its metric, paired
    interval), the pooled flips and KL, and WikiText-2 perplexity (when a run has any of them); the
    generation tasks and the divergence side by side; then ``llm.png``."""
    first = next(iter(cards.values()))
    tasks = [n for n in sets if first.llm.tasks.get(n, {}).get("output_type") == "multiple_choice"]
    if not tasks and not any(card.language_model for card in cards.values()):  # a generation suite
        return [*generation_compare(cards, sets), "", "![llm.png](llm.png)"]
    lines = ["", "## LLM tasks: change vs the run's base (points, [95% paired interval])", "",
             "| run | " + " | ".join(t.replace("_offline", "") for t in tasks)
             + " | flips c→w / w→c | KL | WikiText-2 perplexity |", "|:---|" + "---:|" * (len(tasks) + 3)]
    for name, card in cards.items():
        llm = card.llm
        cells = []
        for t in tasks:
            entry = llm.tasks[t]
            cells.append(delta_text(entry[entry["metric"]]["delta"]) + (" (at chance)" if entry["near_chance"] else ""))
        pooled = llm.pooled or {}
        flips = (f"{pooled['flips']['correct_to_wrong']} / {pooled['flips']['wrong_to_correct']}"
                 if pooled.get("flips") else "–")
        kl = f"{pooled['kl']['value']:.3f}" if pooled.get("kl") else "–"
        lm = card.language_model
        ppl = f"{lm.base['perplexity']:.2f} → {lm.compressed['perplexity']:.2f}" if lm else "–"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {flips} | {kl} | {ppl} |")
    return lines + ["", f"Flips and KL pooled over each run's tasks above chance; {kl_basis(first.llm)}.",
                    *generation_compare(cards, sets), "", "![llm.png](llm.png)"]


def run_names(folders: list[str]) -> list[str]:
    """Short, unique column names: the folder names, with parents added where they clash."""
    paths = [Path(f).resolve() for f in folders]
    depth = 1
    while True:
        names = ["/".join(p.parts[-depth:]) for p in paths]
        if len(set(names)) == len(names) or depth >= max(len(p.parts) for p in paths):
            return names
        depth += 1


def compare_runs(folders: list, out, overwrite: bool = False) -> dict[str, Path]:
    """Check every run folder and ``out``, then write the page; returns the written paths."""
    if len(folders) < 2:
        raise ConfigError(f"compare: give two or more run folders (got {len(folders)})")
    seen: set = set()
    for folder in folders:
        if Path(folder).resolve() in seen:
            raise ConfigError(f"compare: OUT {folder} is given twice")
        seen.add(Path(folder).resolve())
    names = run_names(folders)
    for folder, name in zip(folders, names):  # a column and row name of the tables
        if any(c in name for c in "|\r\n"):
            raise ConfigError(f"compare: OUT {folder}: its name holds a line break or '|', which would break the "
                              "page's tables; rename it (or link it under another name)")
    cards = dict(zip(names, (read_card(f, "OUT") for f in folders)))
    sets = common_sets(cards)
    out = check_output(out, command="compare", inputs={f"OUT{i}": f for i, f in enumerate(folders, start=1)}, overwrite=overwrite)
    with output_lock(out):
        mark_output(out, "compare")
        points = [{"label": name, "group": card.method.name, "numbers": headline_numbers(card)}
                  for name, card in cards.items()]
        plot = pareto_plot(points, out / "pareto.png", f"{next(iter(cards.values())).task.name}: "
                                                       f"{len(cards)} compressed models")
        if all(card.llm for card in cards.values()):
            llm_compare_plot(cards, out / "llm.png")
        text = render_compare(cards, sets, plot.name)
        atomic_write_text(out / "compare.md", text)
        title = f"forgetless compare: {', '.join(cards)}"
        atomic_write_text(out / "compare.html", render_html(text, out, title))
    return {"markdown": out / "compare.md", "html": out / "compare.html", "plot": plot}
