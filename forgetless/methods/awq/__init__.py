"""AWQ: activation-aware weight quantization (Lin et al. 2024): per-channel scales searched on calibration data."""
