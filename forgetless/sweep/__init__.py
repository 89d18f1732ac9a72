"""Sweeps: one compression configuration over objectives × levels of a method option × seeds
(``runner.py``), summarised as mean ± std tables and plots (``table.py``)."""
from .runner import ALL_OBJECTIVES, run_sweep
from .table import METRICS, aggregate, card_metrics, render_markdown, write_sweep

__all__ = ["ALL_OBJECTIVES", "METRICS", "aggregate", "card_metrics", "render_markdown", "run_sweep", "write_sweep"]
