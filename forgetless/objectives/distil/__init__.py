"""Distil: task-specific knowledge distillation from cached teacher probabilities (Sanh et al. 2020;
Du et al. §5.2)."""
