"""What the Snakefile calls once, before any job: the checks (preflight.py) and the values its rules read (dag.py)."""
