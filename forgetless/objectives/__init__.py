"""Training objectives, one folder per family: ``config.py`` (registered, standard library only) and the
implementation; ``formulas.py`` and ``cache.py`` are shared. Importing this package imports nothing."""
