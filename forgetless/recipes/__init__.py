"""Recipe files: a run or a sweep fully described by one YAML file (``load.py``), run with
``forgetless run RECIPE [--scale cpu|paper] [--set key=value ...]``; the fully resolved recipe is
written beside the model (``model/recipe.yaml``) and into the report card (``recipe``) by
``dump.py``. Import from the submodules (``forgetless.recipes.load``, ``forgetless.recipes.dump``):
this package file stays empty so saving a recipe never imports the loader."""
