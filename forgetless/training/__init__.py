"""Fine-tuning on the Hugging Face Trainer with pluggable objectives (see ``trainer.py``)."""
from .encode import collate, encode
from .trainer import ForgetlessTrainer, TrainConfig, fine_tune

__all__ = ["ForgetlessTrainer", "TrainConfig", "collate", "encode", "fine_tune"]
