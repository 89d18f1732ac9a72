"""Attention-head scoring and pruning decisions.

* ``scores``        — pure tensor math: Michel et al. (2019) importance normalisation, RAHP margin,
  C(x, M) (eq. 1), per-head Fisher slices (eq. 3-4), min-max normalisation, composite S (eq. 5),
  protection of the top-γ Fisher heads and global top-K selection.
* ``model_scoring`` — glue on a model: per-example head gates, ΔC per head (eq. 2), Fisher per
  head, Michel importance.
* ``runner``        — timed scoring runs and JSON-able decisions; ``plots`` — RAHP Figures 2-5.
"""
