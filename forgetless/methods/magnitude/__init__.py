"""Iterative magnitude pruning (Du et al. 2023; Zhu & Gupta 2017): ``config.py`` (options),
``method.py`` (the method); the cubic schedule, masks and Trainer callback are shared with RMC's
sample difficulty (``methods/_shared/magnitude.py``)."""
