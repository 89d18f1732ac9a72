"""``python -m forgetless``: the command line (``forgetless.cli``)."""
import sys

from .cli import main

sys.exit(main())
