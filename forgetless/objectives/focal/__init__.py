"""Focal and focal-reweighted losses (Du et al. appendix B)."""
