"""The ``lsdb`` query engine: the suite over the run's HATS collections (``build.py``) with LSDB,
computed on the stage's Dask cluster (``cluster.py``); each query's expression is in
``expressions.py``."""

from __future__ import annotations

import logging
import time
import warnings
from pathlib import Path

import pyarrow.parquet as pq

from ..engines import Deadline
from ..suite import Answer, Query, QueryError
from .build import TABLES, chunk_files
from .expressions import EXPRESSIONS, POSITIONS, plan_both

log = logging.getLogger(__name__)


class LsdbEngine:
    """Opens both collections (their margins and indexes with them) and runs a query's
    expression; ``restart()`` of the cold runs starts a new Dask cluster and opens them again."""

    name = "lsdb"

    def __init__(self, root: Path, cluster, chunks_dir, chunks, n_neighbors: int):
        self.root, self.cluster = Path(root), cluster
        # the chunk files' columns, in their order: SELECT *'s
        self.columns = {t: [c for c in pq.read_schema(chunk_files(chunks_dir, chunks, t)[0]).names]
                        for t in TABLES}
        self.n_neighbors = self.neighbors_used = int(n_neighbors)
        self.deadline = Deadline()
        self._query = ""
        self.catalogs: dict = {}
        self.open()

    def open(self):
        import lsdb
        # a partition function giving a count or a frame, not a catalog: the dask object is what is meant
        warnings.filterwarnings("ignore", "output of the function must be a DataFrame", RuntimeWarning)
        self.catalogs = {t: lsdb.open_catalog(self.root / t, columns="all") for t in TABLES}
        # selecting columns of a catalog drops its margin: the cross-match and the join read these
        self.positions = {t: lsdb.open_catalog(self.root / t, columns=list(POSITIONS[t])) for t in TABLES}
        for t, cat in self.positions.items():
            if cat.margin is None:
                raise QueryError(f"HATS catalog {self.root / t} has no margin catalog: rebuild it")

    def compile_joins(self, chunks_dir, chunks):
        """HATS aligns two catalogs' tiles with functions numba compiles at a process's first
        cross-match and join of a box (~9 CPU-s here): SHV1's and SHV2's plans made once around an
        Object of the first chunk, nothing computed, so that their first cold runs time the query,
        not this process's compiles. The compiled code is kept in numba's cache (beside HATS'
        module, or numba's user cache where that is read-only), which a later job loads (~0.5 CPU-s)."""
        keep_compiled(alignment_functions())
        ra, dec = POSITIONS["Object"][1:]
        row = pq.read_table(chunk_files(chunks_dir, chunks, "Object")[0], columns=[ra, dec]).slice(0, 1).to_pylist()
        if row:
            x, y = row[0][ra], row[0][dec]
            plan_both(self, {"ra_min": max(x - 0.01, 0.0), "ra_max": min(x + 0.01, 360.0),
                             "dec_min": max(y - 0.01, -90.0), "dec_max": min(y + 0.01, 90.0), "radius_deg": 0.001})

    @staticmethod
    def alignment_compiles() -> int:
        """The signatures of HATS' tile alignment numba has compiled, or loaded from its cache, in
        this process so far (a cached entry point brings its callees inlined: fewer are counted)."""
        return sum(len(f.signatures) for f in alignment_functions())

    def restart(self):
        self.cluster.restart()
        self.open()

    def compute(self, what):
        """``what`` computed on the cluster, stopped at the stage's deadline."""
        fut = self.cluster.client.compute(what.to_dask_dataframe() if hasattr(what, "to_dask_dataframe") else what)
        left = self.deadline.left(self._query)
        try:
            return fut.result(timeout=left)
        except TimeoutError:
            fut.cancel()
            raise self.deadline.passed(self._query) from None

    def run(self, q: Query, params: dict) -> Answer:
        expression = EXPRESSIONS.get(q.name)
        if expression is None:
            raise QueryError(f"query {q.name}: the lsdb engine has no expression of it (query/lsdb/expressions.py)")
        self._query = f"query {q.name}"
        t0 = time.perf_counter()
        ans = expression(self, params)
        ans.seconds = time.perf_counter() - t0
        return ans

    def close(self):
        self.catalogs = {}


def keep_compiled(functions: list) -> int:
    """numba's cache turned on for ``functions``: how many it can keep (none where it has no
    folder it may write; they are compiled as before)."""
    kept = 0
    for f in functions:
        try:
            f.enable_caching()
            kept += 1
        except RuntimeError as exc:
            log.info("numba cannot keep %s: %s", f.__name__, exc)
    return kept


def alignment_functions() -> list:
    """HATS' numba functions that align two catalogs' tiles: a module of HATS that is not its
    public API (hats is pinned)."""
    from hats.pixel_tree import pixel_alignment
    from numba.core.registry import CPUDispatcher
    return [f for f in vars(pixel_alignment).values()
            if isinstance(f, CPUDispatcher) and f.py_func.__module__ == pixel_alignment.__name__]
