"""Iterative magnitude pruning (Du et al. 2023; Zhu & Gupta 2017): ``config.py`` (options),
``pruning.py`` (cubic schedule, masks), ``method.py`` (the Trainer callback and the method)."""
