"""RAHP — Robustness-Aware Head Pruning (Ko et al.): options, method, head scores, runner and plots."""
