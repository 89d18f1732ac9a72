"""Recipe files: a run or a sweep fully described by one YAML file (``load.py``), run with
``forgetless run RECIPE [--scale cpu|paper] [--set key=value ...]``; the fully resolved recipe is
written beside the model (``model/recipe.yaml``) and into the report card (``recipe``)."""
from .load import (COMMANDS, dump_recipe, load_recipe, namespace_from_recipe, parse_set, recipe_from_args,
                   schema_from_parser, validate_recipe)

__all__ = ["COMMANDS", "dump_recipe", "load_recipe", "namespace_from_recipe", "parse_set", "recipe_from_args",
           "schema_from_parser", "validate_recipe"]
