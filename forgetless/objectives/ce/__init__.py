"""Cross-entropy with the gold labels (vanilla fine-tuning)."""
