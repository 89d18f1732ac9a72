"""Pieces several compression methods share: layer selection (``layer_selection``), seeded
calibration subsets and batches (``calibration``), the head-pruning runner (``head_pruning``),
calibration statistics (the layer-input Hessian ``H = 2 X Xᵀ / n``), N:M and per-row masks, and the
layer-by-layer calibration runner."""
