"""Wanda: pruning by weights and activations (Sun et al. 2023)."""
