"""Errors raised by forgetless: one class per kind of problem, each with a message a user can act on."""


class ForgetlessError(Exception):
    """Base class: every error forgetless raises on purpose."""


class DataError(ForgetlessError):
    """Bad input data: unreadable file, missing column, unknown label, empty set."""


class ConfigError(ForgetlessError):
    """Unknown method / objective / option name, or an option value out of range."""


class UnsupportedModelError(ForgetlessError):
    """The model's architecture has no adapter, or the operation is not possible for it."""


class OptionError(ConfigError):
    """An option value that is not allowed: NaN / infinite / out of range, or beyond what the model
    has (``--layers 100`` for a 6-layer model). The message names the option and the valid range."""


class OutputFolderError(ForgetlessError):
    """The output folder cannot be used: empty name, an existing file, inside a file, read-only, or
    the output of a different run (pass ``--overwrite`` to replace it)."""


class ModelFileError(ForgetlessError):
    """A model folder that cannot be read safely: pickle-only weights, corrupt or truncated
    safetensors, a manifest whose shapes do not match the weights, or no model at all."""


class DiskFullError(ForgetlessError):
    """The disk filled up while writing (a checkpoint, the model, the report); rerun after freeing
    space: training resumes from the last complete checkpoint."""
