"""SmoothQuant: activation outliers migrated into the weights before W8A8 quantization (Xiao et al. 2023)."""
