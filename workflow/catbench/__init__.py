"""catbench: benchmark Qserv-style catalogs (generation, partitioning, index loading,
queries, restarts) on different storage targets. The Snakemake rules call this package;
it does not depend on Snakemake."""

__version__ = "0.1.0"
