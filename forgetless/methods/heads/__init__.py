"""Attention-head pruning by gate-gradient importance (Michel et al. 2019): ``config.py`` and
``method.py``; the head scoring glue it shares with RAHP lives in ``rahp/``, the head-pruning
runner in ``_shared/head_pruning.py``."""
