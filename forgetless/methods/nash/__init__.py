"""NASH (Ko et al. 2023) and the CoFi-style baseline (Xia et al. 2022): ``config.py`` (both
configs), ``method.py``, ``l0_masks.py`` (hard-concrete masks on heads / FFN units / sub-layers and
the Lagrangian regulariser) and ``hard_concrete.py`` (the pure L0 maths)."""
