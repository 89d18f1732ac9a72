"""Layer removal by Block Influence (ShortGPT, Men et al. 2024): ``config.py``, ``influence.py``
(BI, the maths and its measurement on a model) and ``method.py``."""
