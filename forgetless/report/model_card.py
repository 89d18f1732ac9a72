"""The Hugging Face model card (``README.md`` with YAML metadata) of a saved model folder: the one
writer of it (``write_model_card``). Without a summary it says what the folder holds (architecture,
kept heads / widths / layers, how to load it, a warning when stock ``from_pretrained`` cannot
rebuild the model); with the ``summary`` of a run's report card (``model_card_summary``: headline
table with bootstrap intervals, size, speed, warnings) it also says what the compression cost, so
the model folder tells it wherever it is copied. ``summary`` is a plain dict; every key is optional:

    base_model      str   model the compression started from (hub id, short name or path; the card
                          names its hub id: ``base_hub_id``)
    method          str   compression method name ("truncate", "heads", ...)
    method_options  dict  the method's options
    objective       str   training objective ("ce", "distil", "rmc", ...)
    task            str   task name
    task_kind       str   classification | generation | lm-eval (what the card's first line says it reports)
    metrics         list  [{"set": str, "n": int, "base": float|None, "compressed": float|None,
                            "metric": str (default "accuracy"), optional "base_interval" /
                            "compressed_interval" / "delta_interval": [low, high] (the last paired, of
                            compressed − base), "flips": "c→w / w→c", "kl": str, "note": str}, ...]:
                          the headline table (and the evaluation results of the YAML header)
    size            dict  name → value, e.g. {"parameters_base": 22.7e6, "parameters_compressed": 11e6,
                          "disk_bytes": ...}; rendered as a two-column table
    speed           dict  name → value, e.g. {"throughput speedup": "1.90× [1.71, 2.05]", "device": "cpu",
                          "threads": 2}, or {"timed": "no", "why": …} (``--speed``)
    methods         list  the names of the method chain (the card's tags)
    provenance      str   where the base came from (e.g. dequantized from a 4-bit GGUF)
    deployment      list  sentences: what speedup or saving a user gets where, per method
    warnings        list  sentences a reader must see (e.g. from ``report.trust``)
    license, language, model_name   card metadata

An unknown key is a ``ConfigError`` (a typo would silently drop a number from the card).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from huggingface_hub import EvalResult, ModelCard, ModelCardData

from ..errors import ConfigError
from ..fsutil import atomic_write_text
from ..models.loading import HUB_IDS
from ..models.manifest import MANIFEST, read_manifest
from ..models.stock import stock_loadable
from ..models.tiny import TINY_CLASSIFIERS, TINY_SEQ2SEQ
from .inert import inert
from .model_card_sections import (deployment_notes, metric_rows, number, provenance_line, results_table,
                                  size_summary, speed_summary)
from .card_types import Card
from .naming import card_chain

SUMMARY_KEYS = ("base_model", "method", "methods", "method_options", "objective", "task", "task_kind", "metrics",
                "size", "speed", "provenance", "deployment", "warnings", "license", "language", "model_name")
METRIC_KEYS = ("set", "n", "base", "compressed", "metric", "base_interval", "compressed_interval", "delta_interval",
               "flips", "kl", "note")
WHAT_IT_REPORTS = {  # the card's first line, by the task kind of the run that made it
    "classification": "dev vs challenge-set accuracy, relative bias, size, measured speed",
    "generation": "ROUGE / METEOR of the base and the compressed model, size, measured speed",
    "lm-eval": "lm-evaluation-harness tasks compared with the base item by item: accuracy with paired intervals, "
               "flips, KL; perplexity; size on disk; speed",
}
CARD_FILE = "README.md"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
_OWNER_SLASH_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def base_hub_id(base) -> str | None:
    """The Hugging Face hub id the base model stands for, or None: a short name's model
    (``minilm`` → ``sentence-transformers/all-MiniLM-L6-v2``; tiny test models have none), a hub id
    given as is, or a local folder whose ``config.json`` ``_name_or_path`` reads as ``owner/name``."""
    if not isinstance(base, str) or not base or base in (*TINY_CLASSIFIERS, *TINY_SEQ2SEQ):
        return None
    if base in HUB_IDS:
        return HUB_IDS[base]
    folder = Path(base)
    if not folder.exists():
        return base if _HUB_ID.match(base) else None
    try:
        name = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("_name_or_path")
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) and _OWNER_SLASH_NAME.match(name) and not Path(name).exists() else None


def shapes_are_uniform(manifest_or_dir: dict | str | Path) -> bool:
    """True when, in every stack, all layers have the same head count per attention kind and the same
    FFN width (from a ``forgetless.json`` manifest, or the folder holding one).

    Uniform shapes are necessary, not sufficient, for stock ``from_pretrained``: a uniform head count
    below the original still cannot be written into the config (see ``stock.stock_loadable``)."""
    manifest = manifest_or_dir if isinstance(manifest_or_dir, dict) else read_manifest(manifest_or_dir)
    shape = manifest.get("shape", manifest)
    heads: dict[tuple[str, str], set[int]] = {}
    for stack, _layer, kind, count in shape["heads"]:
        heads.setdefault((stack, kind), set()).add(int(count))
    widths: dict[str, set[int]] = {}
    for stack, _layer, width in shape["ffn"]:
        widths.setdefault(stack, set()).add(int(width))
    return all(len(values) == 1 for values in [*heads.values(), *widths.values()])


def _check_summary(summary: dict) -> None:
    unknown = sorted(set(summary) - set(SUMMARY_KEYS))
    if unknown:
        raise ConfigError(f"model card summary: unknown key(s) {', '.join(unknown)}; valid: {', '.join(SUMMARY_KEYS)}")
    for i, row in enumerate(summary.get("metrics") or []):
        bad = sorted(set(row) - set(METRIC_KEYS))
        if bad or "set" not in row:
            raise ConfigError(f"model card summary: metrics[{i}] needs 'set' and only {', '.join(METRIC_KEYS)} "
                              f"(got {', '.join(sorted(row))})")


def _pipeline_tag(model_class: str) -> str | None:
    if model_class.endswith("ForSequenceClassification"):
        return "text-classification"
    if model_class.endswith("ForCausalLM"):
        return "text-generation"
    if model_class.endswith("ForConditionalGeneration") or model_class == "EncoderDecoderModel":
        return "text2text-generation"
    return None


def _key_value_table(values: dict) -> list[str]:
    return ["| | |", "|---|---|", *[f"| {key} | {number(value)} |" for key, value in values.items()]]


def _query_heads_per_group(config: dict) -> int:
    """G = query heads per key/value group (grouped-query attention: SmolLM2's 9 / 3 = 3; else 1).
    The manifest counts attention *units*: key/value groups under GQA (``models/sites.py``)."""
    heads, groups = config.get("num_attention_heads"), config.get("num_key_value_heads")
    return heads // groups if isinstance(heads, int) and isinstance(groups, int) and 0 < groups < heads else 1


def _architecture_section(shape: dict, config: dict) -> list[str]:
    per_group = _query_heads_per_group(config)
    self_heads = (f"self-attention query heads (key/value groups, {per_group} query heads each)" if per_group > 1
                  else "self-attention heads")
    lines = ["## Architecture (kept heads, FFN widths, layers)", "",
             "Layers per stack: " + ", ".join(f"{stack} {count}" for stack, count in shape["layers"].items()), "",
             f"| stack | layer | {self_heads} | cross-attention heads | FFN width |", "|---|---|---|---|---|"]
    heads = {(stack, layer, kind): count for stack, layer, kind, count in shape["heads"]}
    for stack, layer, width in shape["ffn"]:
        cross, units = heads.get((stack, layer, "cross")), heads.get((stack, layer, "self"))
        shown = "–" if units is None else (f"{units * per_group} ({units})" if per_group > 1 else units)
        lines.append(f"| {stack} | {layer} | {shown} | {'–' if cross is None else cross} | {width} |")
    return lines + [""]


SHAPE_REASONS = ("attention heads were removed", "FFN widths differ", "config.json describes layers")


def _loading_section(model_class: str, loadable: bool, reason: str, asymmetric: bool) -> list[str]:
    """How to load the folder: ``forgetless.load_model``, and what stock ``from_pretrained`` does
    (``models/stock.stock_loadable``'s verdict and reason; an asymmetric compressed-tensors folder gets
    the ``CompressedTensorsConfig(dequantize=True)`` call that loads it)."""
    lines = ["## How to load", "", "```python", "import forgetless", "",
             'model, tokenizer = forgetless.load_model("path/to/this/folder")', "```", ""]
    stock = ["```python", "import transformers", "", f'model = transformers.{model_class}.from_pretrained('
             '"path/to/this/folder", use_safetensors=True, trust_remote_code=False']
    if loadable and asymmetric:
        lines += [f"Stock `transformers` loads it with the `compressed-tensors` package installed, dequantized: "
                  f"{reason}.", "", *stock[:-1], stock[-1] + ",",
                  "    quantization_config=transformers.CompressedTensorsConfig(dequantize=True))", "```", ""]
    elif loadable:
        lines += [f"Stock `transformers` loads it too ({reason}):", "", *stock[:-1], stock[-1] + ")", "```", ""]
        tag = _pipeline_tag(model_class)
        if tag == "text-classification":  # a pipeline needs the stock classes; seq2seq folders load as above
            lines += ["or as a pipeline:", "", "```python",
                      f'classify = transformers.pipeline("{tag}", model="path/to/this/folder", '
                      'trust_remote_code=False, model_kwargs={"use_safetensors": True})',
                      'print(classify("a sentence to classify"))', "```", ""]
    else:
        why = f"{reason[0].upper()}{reason[1:]}."
        if reason.startswith(SHAPE_REASONS):
            why += (" Stock `transformers` builds every layer from one config value, so "
                    f"`{model_class}.from_pretrained` fails with size mismatches (or, with "
                    "`ignore_mismatched_sizes=True`, silently re-initialises weights).")
        lines += [f"> **Warning: stock `from_pretrained` cannot rebuild this model.** {why} "
                  "Load it with `forgetless.load_model`.", ""]
    return lines


def _card_data(summary: dict, manifest: dict, name: str, loadable: bool, uniform: bool) -> ModelCardData:
    method = summary.get("method")
    pipeline_tag = _pipeline_tag(manifest["model_class"])
    results = []
    for row in summary.get("metrics") or []:
        if isinstance(row.get("compressed"), (int, float)) and pipeline_tag and summary.get("task"):
            results.append(EvalResult(task_type=pipeline_tag, dataset_type=str(summary["task"]),
                                      dataset_name=f"{summary['task']} {row['set']}", dataset_split=str(row["set"]),
                                      metric_type=row.get("metric", "accuracy"), metric_value=float(row["compressed"])))
    return ModelCardData(
        base_model=base_hub_id(summary.get("base_model")),
        library_name="transformers", license=summary.get("license"), language=summary.get("language"),
        pipeline_tag=pipeline_tag, model_name=name, eval_results=results or None,
        tags=["forgetless", "model-compression", *(summary.get("methods") or ([method] if method else []))],
        forgetless={key: value for key, value in (
            ("model_class", manifest["model_class"]), ("method", method), ("objective", summary.get("objective")),
            ("task", summary.get("task")), ("shapes_uniform", uniform), ("stock_loadable", loadable),
        ) if value is not None},
    )


def render_model_card(model_dir: str | Path, summary: dict | None = None) -> ModelCard:
    """The model card for the saved model in ``model_dir`` (see the module docstring for ``summary``)."""
    model_dir = Path(model_dir)
    summary = dict(summary or {})
    _check_summary(summary)
    manifest = read_manifest(model_dir)
    loadable, reason = stock_loadable(model_dir)
    config = json.loads((model_dir / "config.json").read_text()) if (model_dir / "config.json").is_file() else {}
    groups = ((config.get("quantization_config") or {}).get("config_groups") or {}).values()
    asymmetric = any(not (group.get("weights") or {}).get("symmetric", True) for group in groups)
    uniform = shapes_are_uniform(manifest)
    name = summary.get("model_name") or model_dir.name
    reports = WHAT_IT_REPORTS.get(summary.get("task_kind"))
    lines = [f"# {name}", "",
             f"A compressed `{manifest['model_class']}` made with forgetless, which reports what compression cost"
             + (f" ({reports})." if reports else "."), ""]
    hub_id = base_hub_id(summary.get("base_model"))
    link = f"Compressed from [`{hub_id}`](https://huggingface.co/{hub_id})." if hub_id else None
    if link:  # a hub id holds only [A-Za-z0-9_.-/] (base_hub_id): the one link the card has
        lines += [link, ""]
    described = {key.replace("_", " "): summary[key] for key in ("base_model", "method", "objective", "task")
                 if summary.get(key)}
    if summary.get("provenance"):
        described["base provenance"] = summary["provenance"]
    if summary.get("method_options"):
        described["method options"] = "`" + json.dumps(summary["method_options"], sort_keys=True) + "`"
    if described:
        lines += [*_key_value_table(described), ""]
    if summary.get("warnings"):
        lines += ["## Warnings", "", *[f"- {warning}" for warning in summary["warnings"]], ""]
    if summary.get("metrics"):
        lines += ["## Results", "", *results_table(summary["metrics"]), ""]
    for section in ("size", "speed"):
        if summary.get(section):
            lines += [f"## {section.capitalize()}", "", *_key_value_table(summary[section]), ""]
    if summary.get("deployment"):
        lines += ["## Deployment: what speedup or saving you get where", "",
                  *[f"- {sentence}" for sentence in summary["deployment"]], ""]
    lines += _architecture_section(manifest["shape"], config)
    lines += _loading_section(manifest["model_class"], loadable, reason, asymmetric)
    data = _card_data(summary, manifest, name, loadable, uniform)
    body = inert("\n".join(lines), keep=(link,) if link else ())  # names from users' data stay text on the hub
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + body)


def write_model_card(model_dir: str | Path, summary: dict | None = None) -> Path:
    """Write (or rewrite) ``README.md`` in ``model_dir`` atomically; returns its path. Its title is the
    summary's ``model_name``, else the folder's name."""
    model_dir = Path(model_dir)
    if not (model_dir / MANIFEST).is_file():
        raise ConfigError(f"{model_dir}: no {MANIFEST}; a model card needs a folder written by forgetless.save_model")
    card = render_model_card(model_dir, summary)
    path = model_dir / CARD_FILE
    atomic_write_text(path, str(card))
    return path


# ----- the summary of a run's report card -------------------------------------------------------------
def model_card_summary(card: Card) -> dict:
    """``write_model_card`` summary from a report card (schema ``forgetless-report-2``): the results
    rows of its task kind (``model_card_sections.metric_rows``), size, speed, provenance, deployment,
    warnings."""
    methods = card.method.chain()
    chain = card_chain(card)
    base = str(card.run.get("model") or "model").rstrip("/").split("/")[-1]
    recipe = card.run.get("scheme") or "-".join(m.name for m in methods)
    return {"model_name": f"{base}-{recipe}-{card.task.name}",
            "base_model": card.run.get("model"), "method": chain, "methods": [m.name for m in methods],
            "method_options": methods[0].config if len(methods) == 1 else {m.name: m.config for m in methods},
            "objective": card.method.objective, "task": card.task.name, "task_kind": card.kind.task,
            "metrics": metric_rows(card), "size": size_summary(card), "speed": speed_summary(card),
            "provenance": provenance_line(card), "deployment": deployment_notes(card),
            "warnings": list(card.warnings)}
