"""JTT, Just Train Twice (Liu et al. 2021): up-weighting the errors of a first model."""
