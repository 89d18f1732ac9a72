"""SparseGPT: one-shot pruning with OBS weight reconstruction (Frantar & Alistarh 2023)."""
