"""The config's one error: every refusal names its key (and the file and line where it came from)."""


class ConfigError(ValueError):
    pass
