"""The user's own catalog files: the index input read from them (index.py, ``index.source:
file``) and the base patch read from them (patch.py, ``catalog.patch.file``)."""
