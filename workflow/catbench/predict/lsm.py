"""MyRocks' pieces of the scale model (model.md): what its misses cost (``lsm_fit``), and its
SST index blocks against its block cache's shards. RocksDB splits its LRU block cache into
shards of at least 512 KiB, at most 64 of them, and an entry larger than its shard does not
stay: an SST's index block (one block per file, held in the cache) that outgrows a shard is
read and decompressed again, whole, at every key check an insert makes in that file. Files of
level 0 are pinned and exempt."""

from __future__ import annotations

import dataclasses
import math
from statistics import median

import numpy as np

from .rate import RateCurve, fit_rate

SST_FILE = 64 * 2 ** 20        # target_file_size_base when the config does not set it (RocksDB's)
MIN_SHARD = 512 * 2 ** 10      # RocksDB's least shard of an LRU cache (GetDefaultCacheShardBits)
MAX_SHARD_BITS = 6


def shard_bytes(cache: float) -> float:
    """The bytes of one shard of an LRU block cache of ``cache`` bytes, as RocksDB splits it
    when MyRocks leaves the number to it."""
    shards = int(cache // MIN_SHARD)
    bits = 0
    while shards > 1 and bits < MAX_SHARD_BITS:
        shards >>= 1
        bits += 1
    return cache / 2 ** bits


def index_ratio(table_files: list[dict]) -> float | None:
    """The median over loads of MyRocks' SST index bytes per data byte (the loads'
    ``table_files``), None without them."""
    got = [f["index_bytes"] / f["data_bytes"] for f in table_files
           if f and f.get("index_bytes") and f.get("data_bytes")]
    return median(got) if got else None


def index_block_refusal(ratio: float | None, sst_file: float | None, cache: float) -> str:
    """Why a MyRocks load that checks each key (filled in input order) cannot be predicted at a
    target whose SST files (``sst_file``, target_file_size_base) hold an index block larger than
    a shard of its block cache ``cache``; "" when it fits or nothing says how large it is."""
    if not ratio or not cache:
        return ""
    sst = sst_file or SST_FILE
    block, shard = ratio * sst, shard_bytes(cache)
    if block <= shard:
        return ""
    cache_needed = 2 ** MAX_SHARD_BITS * block
    return (f"an SST of {sst / 2**20:,.0f} MiB (target_file_size_base) would hold a {block / 2**20:,.2f} MiB index "
            f"block (the rungs' {ratio:.1%} of its data), larger than a {shard / 2**10:,.0f} KiB shard of the "
            f"{cache / 2**20:,.0f} MiB block cache: every key check would read it again, which no model here "
            f"describes (it cut the rate 8× where measured). A block cache of at least "
            f"{math.ceil(cache_needed / 2**20):,} MiB, or SST files of at most "
            f"{math.floor(shard / ratio / 2**20):,} MiB, keeps it cached")


def lsm_fit(x, rate, w, form: str, misses, dev, device: dict, depth) -> tuple[RateCurve, float | None]:
    """An LSM's curve and its miss share: a block-cache miss costs b (its read from RAM and its
    decompression, fitted), one the device serves b + Δ, Δ = fio's page-read − cache-read on the
    target (added, not scaled: nothing is written back). The rungs' device reads' Δ is taken off
    their seconds before the fit; m(x)'s ceiling is fitted (a key check probes several runs)."""
    delta = max(0.0, device.get("page_read_s", 0.0) - device.get("cache_read_s", 0.0)) \
        if device.get("page_read_s") and device.get("cache_read_s") else 0.0
    if delta and dev is not None:
        spr = 1.0 / rate
        rate = 1.0 / np.maximum(spr - delta * np.nan_to_num(dev), 0.1 * spr)
    curve = fit_rate(x, rate, w, form, misses, None, depth, runs=True)
    if curve.form != "misses" or not delta:
        return curve, None
    b = curve.miss_s
    return dataclasses.replace(curve, miss_s=b + delta, cache_s=b), b / (b + delta)
