"""Sweeps: one compression configuration over objectives × levels of a method option × seeds
(``runner.py``), summarised as mean ± std tables and plots (``table.py``)."""
from .runner import run_sweep
from .table import METRICS, aggregate, card_metrics, render_markdown, write_sweep

__all__ = ["METRICS", "aggregate", "card_metrics", "render_markdown", "run_sweep", "write_sweep"]
