"""Report cards: JSON (schema in ``card.py``) plus a Markdown rendering and plots."""
