"""Recipe files: a run, a sweep or a profile fully described by one YAML file (``load.py``), run with
``forgetless run RECIPE [--scale cpu|paper] [--set key=value ...]``; the fully resolved recipe is
written beside the model (``model/recipe.yaml``) and into the report card (``recipe``)."""
from .load import COMMANDS, dump_recipe, load_recipe, parse_set, resolved, validate_recipe

__all__ = ["COMMANDS", "dump_recipe", "load_recipe", "parse_set", "resolved", "validate_recipe"]
