"""The tests' generation tasks: their data (``answers.jsonl`` beside this file) and per-item metrics."""
import json
from collections import Counter
from pathlib import Path

import datasets


def answers(**_) -> datasets.DatasetDict:
    rows = [json.loads(line) for line in (Path(__file__).parent / "answers.jsonl").read_text().splitlines() if line]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


def process_results(doc, results):
    """has_letter: the answer holds a letter of the target; char_f1: F1 of the two bags of characters;
    per_char: one 0 / 1 per target character (in the answer or not)."""
    answer, target = results[0], doc["answer"]
    common = sum((Counter(answer) & Counter(target)).values())
    f1 = 0.0 if not common else 2 * common / (len(answer) + len(target))
    return {"has_letter": any(c in answer for c in target), "char_f1": f1,
            "per_char": [int(c in answer) for c in target]}


def agg_units(items):
    """The mean over every unit of every item (IFEval's agg_inst_level_acc)."""
    flat = [v for item in items for v in item]
    return sum(flat) / len(flat)
