"""RMC (Du et al. §5): variance-based sample difficulty (§5.1, eq. 2) and distillation from
instance-level smoothed teacher probabilities (eq. 3-4)."""
