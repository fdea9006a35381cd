"""Which node holds a chunk when chunks spread over several: round-robin over the chunks in
chunkId order, so neighbouring chunks (a box's) fall on different nodes, as Qserv's replication
spreads them. The query stage places its worker servers' chunks by it, the query model a
user's cluster."""

from __future__ import annotations

import numpy as np


def round_robin(chunk_ids, nodes: int) -> dict[int, int]:
    """{chunkId: node} over ``nodes`` nodes."""
    return {c: k % nodes for k, c in enumerate(sorted(chunk_ids))}


def node_sums(values: np.ndarray, nodes: int) -> np.ndarray:
    """Per node, the sum of ``values`` (one a chunk, in chunkId order) placed by :func:`round_robin`."""
    where = np.array(list(round_robin(range(len(values)), nodes).values()), int)
    return np.bincount(where, weights=values, minlength=nodes)
