"""Fine-tuning on the Hugging Face Trainer (``trainer.py``), the contract every training objective
implements (``objective.py``; the objectives themselves are in ``forgetless/objectives``) and the
encoding of examples into token ids (``encode.py``). Import from the submodules: importing this
package does not import the Trainer stack (about 2 s), so evaluation-only commands start fast."""
