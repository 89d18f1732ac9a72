"""Seq2seq compression (Ko et al., "NASH: A Simple Unified Framework of Structured Pruning for
Accelerating Encoder-Decoder Language Models"): tasks and generation metrics, hard-concrete L0
masks with a Lagrangian sparsity constraint, decoder layer selection, distillation, NASH and a
CoFi-style baseline, generation speed benchmarks and profiling."""
