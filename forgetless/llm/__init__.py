"""LLM evaluation through lm-evaluation-harness: the engine (``engine.py``), the per-item records
forgetless keeps (``records.py``), the suites of the LLM tasks (``suite.py``; registered as
``llm-zero-shot`` and ``lm-eval`` in ``data/llm_tasks.py``) and the shipped task YAMLs of the offline
copies (``tasks/``). The paired analysis lives in ``metrics/paired.py`` and ``report/llm_section.py``."""
