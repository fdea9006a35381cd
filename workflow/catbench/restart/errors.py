"""The restart stage's error."""


class RestartError(RuntimeError):
    """A restart failed: the server did not come back, or rows were lost / answers changed."""
