"""Training objectives, one folder per family (``ce``, ``distil``, ``smooth``, ``focal``, ``jtt``,
``rmc``, ``robust``, ``nash_distil``): each holds ``config.py`` (the config dataclasses, registered in
``forgetless.registry.OBJECTIVES``; standard library only) and the implementation modules, which
subclass the contract of ``forgetless.training.objective``. Shared here: ``formulas.py`` (the loss
formulas of Du et al.'s objectives) and ``cache.py`` (per-training-set caches on disk).

Importing this package imports nothing: the registry finds the families' ``config.py`` on its first
lookup and imports an implementation only when a run builds it."""
