"""Models: architecture adapters (importing the package registers every family), gates, surgery, I/O."""
from . import adapters, decoder_only, seq2seq  # noqa: F401  (registers every architecture family)
