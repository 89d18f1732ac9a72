"""Pieces several compression methods share: layer selection, calibration, head pruning, Hessians, masks."""
