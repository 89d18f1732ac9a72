"""Seq2seq compression (Ko et al., "NASH: A Simple Unified Framework of Structured Pruning for
Accelerating Encoder-Decoder Language Models"): tasks and generation metrics, hard-concrete L0
masks with a Lagrangian sparsity constraint, decoder layer selection, distillation, NASH and a
CoFi-style baseline, generation speed benchmarks and profiling.

Modules: ``data`` (tasks), ``metrics`` (ROUGE / METEOR), ``hardconcrete`` (gate math),
``l0masks`` (masks on a model, parameter counts, finalize), ``selection`` (layer selection,
distillation losses), ``trainer`` (``Trainer`` subclass with the §4.3 objective), ``nash``
(NASH / CoFi recipes), ``speed`` (latency, profile), ``pipeline`` (entry points), ``report``,
``cli_args`` (argparse wiring). Architecture knowledge stays in ``forgetless.models.seq2seq``.

Entry points::

    from forgetless.seq2seq.pipeline import run_compress, run_profile, train_teacher
    run_compress("nash", model="minilm", task="tweetqa", data_dir="../shared/data",
                 decoder_layers=3, encoder_sparsity=0.3, output_dir="runs/nash")
    run_profile("minilm", "runs/profile")
"""
