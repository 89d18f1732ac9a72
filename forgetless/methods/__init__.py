"""Compression methods, one folder each: ``<name>/config.py`` (the options dataclass, registered
with ``@METHODS.register(name, implementation=".method:Class")``, standard library only) and
``<name>/method.py`` (the ``CompressionMethod`` subclass, ``base.py``) with its maths modules.
``_shared/`` holds what several methods use (layer selection, calibration subsets, head pruning,
masks, Hessians). The registry (``forgetless.registry``) imports the configs on first lookup and a
method's code only when a run builds it, so this package imports nothing."""
