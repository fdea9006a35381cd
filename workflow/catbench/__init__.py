"""catbench: benchmark Qserv-style catalogs (generation, partitioning, index loading,
queries, restarts) on different storage targets. The Snakemake rules call this package;
it does not depend on Snakemake."""

import os

# Before numpy's first import: catbench's arrays never need a BLAS thread pool, and
# OpenBLAS's, started at import, spins ~0.15 CPU-s a process (Snakemake sets the job's
# thread count here, which is for the job's servers and engines, not for BLAS).
os.environ["OPENBLAS_NUM_THREADS"] = "1"

__version__ = "0.1.0"
