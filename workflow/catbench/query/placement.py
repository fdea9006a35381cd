"""Where a chunk's tables live when the mysql engine has several workers (``queries.workers``):
core/sky/placement.py's round-robin. The czar (``engines.MysqlEngine``) sends each chunk query
to the worker this names."""

from __future__ import annotations

from ..core.sky.placement import round_robin
from .suite import QueryError


def place(chunk_ids, workers: int) -> dict[int, int]:
    """{chunkId: worker} over ``workers`` workers; each must hold a chunk (QueryError naming the key)."""
    ids = sorted(chunk_ids)
    if workers > len(ids):
        raise QueryError(f"config key 'queries.workers': {workers} workers for {len(ids)} chunks with Objects; "
                         f"each worker must hold a chunk: at most {len(ids)}")
    return round_robin(ids, workers)


def held_by(placement: dict[int, int], worker: int) -> set[int]:
    """The chunks ``worker`` holds."""
    return {c for c, w in placement.items() if w == worker}
