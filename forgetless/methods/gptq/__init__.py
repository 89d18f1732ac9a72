"""GPTQ: weight-only post-training quantization with second-order error feedback (Frantar et al. 2022)."""
