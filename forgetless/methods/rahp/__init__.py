"""RAHP — Robustness-Aware Head Pruning, all of it: ``config.py`` (options), ``method.py`` (the
method), ``scores.py`` (pure maths: margin, C(x, M), Fisher slices, normalisation, composite score,
selection), ``model_scoring.py`` (per-head scores on a model: ΔC, Fisher, Michel importance),
``fast_delta_c.py`` (first-order and hybrid ΔC), ``runner.py`` (timed scoring run, decision) and
``plots.py`` (Figures 2-5)."""
