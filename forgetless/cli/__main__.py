"""``python -m forgetless.cli`` (used under ``accelerate launch``)."""
import sys

from . import main

sys.exit(main())
