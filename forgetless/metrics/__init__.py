"""What a model scores: accuracy per set, F_bias, hard vs easy, calibration, generation quality,
perplexity, CLEVER, size and speed (computed here; ``report/`` renders them)."""
