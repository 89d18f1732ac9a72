"""LLM evaluation through lm-evaluation-harness: the engine (``engine.py``: tasks and
``simple_evaluate``), forgetless's model inside it (``lm.py``) and its log-likelihoods (``scoring.py``:
shared-context scoring, bounded memory), the per-item records forgetless keeps (``records.py``), the
suites of the LLM tasks (``suite.py``; registered as ``llm-zero-shot`` and ``lm-eval`` in
``data/llm_tasks.py``; stopping at a precision, ``--until-interval``: ``kinds/stopping.py``), what the card
says about them (``card.py``) and the shipped task YAMLs of the offline copies (``tasks/``). The paired
analysis lives in ``metrics/paired.py`` and ``report/llm_section.py``."""
