"""Truncated student (Du et al. 2023's Truncated-l6): ``config.py`` and ``method.py``."""
