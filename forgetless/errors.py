"""Errors raised by forgetless: one class per kind of problem, each with a message a user can act on."""


class ForgetlessError(Exception):
    """Base class: every error forgetless raises on purpose."""


class DataError(ForgetlessError):
    """Bad input data: unreadable file, missing column, unknown label, empty set."""


class ConfigError(ForgetlessError):
    """Unknown method / objective / option name, or an option value out of range."""


class UnsupportedModelError(ForgetlessError):
    """The model's architecture has no adapter, or the operation is not possible for it."""
