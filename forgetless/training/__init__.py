"""Fine-tuning on the Hugging Face Trainer with pluggable objectives (``trainer.py``) and the
encoding of examples into token ids (``encode.py``). Import from the submodules: importing this
package does not import the Trainer stack (about 2 s), so evaluation-only commands start fast."""
