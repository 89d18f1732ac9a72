"""Smooth: distillation from globally smoothed teacher probabilities (Du et al. §5.2, eq. 3 with one
exponent for every sample)."""
