"""NASH's distillation objective for encoder-decoders (Ko et al. 2023, §4.3)."""
