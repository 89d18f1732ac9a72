"""Fine-tuning (``trainer.py``), the objective contract (``objective.py``) and encoding (``encode.py``);
importing this package does not import the Trainer stack (about 2 s)."""
