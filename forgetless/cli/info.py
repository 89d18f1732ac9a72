"""The commands that only list: ``list`` (methods, objectives, tasks, models) and ``recipes``. Light at
import time: no torch, no plotting library."""
from __future__ import annotations

from ..config import ANY_DECODER, MODEL_TYPES, MODELS
from ..data.tasks import TASKS
from ..recipes.catalog import catalogue
from ..registry import METHODS, OBJECTIVES


def cmd_list(args, config) -> int:
    """Methods with the model kinds and task types each applies to and the data it calibrates on,
    objectives with the model kinds they train, tasks, models by name and supported model types."""
    print("methods (model kinds; task types; calibration data):")
    width = max(map(len, METHODS.names()))
    for name in METHODS.names():
        c = METHODS.config_class(name)
        print(f"  {name:<{width}}  {'/'.join(c.model_kinds)}; {'/'.join(c.task_types)}; {c.calibration}")
    print("objectives: ", ", ".join(f"{n} ({'/'.join(OBJECTIVES.config_class(n).model_kinds)})"
                                    for n in OBJECTIVES.names()))
    print("tasks:      ", ", ".join(TASKS.names()))
    print("models (--model; or a local folder, a hub id, in Python a model object):")
    for name, what in MODELS.items():
        print(f"  {name:<{width}}  {what}")
    print("model types:", ANY_DECODER)
    print("  per family (head / FFN-unit pruning, encoders, encoder-decoders):", ", ".join(MODEL_TYPES))
    return 0


def cmd_schema(args, config) -> int:
    """``forgetless schema``: the shipped JSON Schema of ``report.json`` (``report/report.schema.json``)."""
    from ..report.card_types import SCHEMA_FILE

    print(SCHEMA_FILE.read_text(encoding="utf-8"), end="")
    return 0


def cmd_recipes(args, config) -> int:
    """``forgetless recipes``: the built-in recipes, the command each runs and the paper table it reproduces."""
    rows = catalogue()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['command']:<8} {row['paper']}")
    print(f"\n{len(rows)} recipes; scales: cpu (default) and paper. Run one: forgetless run NAME --scale cpu "
          "[--data-dir DIR]; see its options: forgetless run NAME --check")
    return 0
