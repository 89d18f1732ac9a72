"""Range checks for option values: one message shape (option, value, valid range) everywhere, for
the CLI, recipes and the Python API alike. A leaf module (imports nothing of forgetless but errors)."""
from __future__ import annotations

import math

from .errors import OptionError

MAX_TOKENS = 8192  # no input is longer than this many tokens, whatever the model's position limit
MAX_OPSET = 30  # highest ONNX opset accepted (torch's dynamo exporter writes 18 or later)


def check_number(flag: str, value, low=None, high=None, integer: bool = False, low_open: bool = False,
                 high_open: bool = False) -> None:
    """``value`` must be a finite number (an int when ``integer``) in [low, high] (``low_open`` /
    ``high_open``: strictly above ``low`` / below ``high``); the error names ``flag`` and the valid range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OptionError(f"{flag}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise OptionError(f"{flag}: must be a finite number, got {value}")
    if integer and not float(value).is_integer():
        raise OptionError(f"{flag}: expected a whole number, got {value!r}")
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        lo = "" if low is None else (f"> {low}" if low_open else f">= {low}")
        hi = "" if high is None else (f"< {high}" if high_open else f"<= {high}")
        raise OptionError(f"{flag}: {value} is out of range; valid: {' and '.join(x for x in (lo, hi) if x)}")
