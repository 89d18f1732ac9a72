"""Compression methods, one folder each: ``config.py`` (registered, standard library only) and
``method.py``; ``_shared/`` holds what several use. Importing this package imports nothing."""
