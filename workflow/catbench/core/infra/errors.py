"""The error a storage target raises, in a module of its own: files.py raises it without
importing targets (which imports the config, which reads files)."""


class TargetError(RuntimeError):
    """A storage target cannot be used; the message says which and what to do."""
