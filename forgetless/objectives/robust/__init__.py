"""Robust fine-tuning baselines of RAHP's Table 1: SMART, R-Drop, FreeLB, Child-Tuning_D, ROSE."""
