"""Models: architecture adapters (one per family), gates as hooks, surgery, save / load, loading.

Importing the package registers every architecture family's adapter."""
from . import adapters, decoder_only, seq2seq  # noqa: F401  (registers every architecture family)
