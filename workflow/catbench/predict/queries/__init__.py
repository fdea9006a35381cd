"""Queries at the user's scale: each class's time on N nodes from the query rungs' chunk
queries (runs.py reads them, model.py fits and places them)."""
