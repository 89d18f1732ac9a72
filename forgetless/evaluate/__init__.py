"""Evaluation: accuracy per set, F_bias, hard vs easy, parameters, speed."""
