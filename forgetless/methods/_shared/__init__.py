"""Pieces several compression methods share: calibration statistics (the layer-input Hessian
``H = 2 X Xᵀ / n``), N:M and per-row masks, and the layer-by-layer calibration runner."""
