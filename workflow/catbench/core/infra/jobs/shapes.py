"""What the prepare stage and the jobs' sizing both read of the catalog, partition and index
sections, read once here: core/infra/jobs/sizing.py ``RunSizes`` holds these, and the prepare
stage's spec (prepare/spec.py ``CatalogSpec``, ``IndexSpec``) extends them. Light on purpose:
every prepare job imports it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CatalogShape:
    """catalog and partition keys that size a job's memory, read here once: the prepare
    stage's spec (prepare/spec.py ``CatalogSpec``) is this with the rest of the catalog."""
    filler_columns: int
    max_objects_per_part: int
    sources_per_object: float
    patch_objects: int
    id_layout: str
    max_rows_per_group: int

    @classmethod
    def of(cls, cfg: dict) -> CatalogShape:
        cat = cfg["catalog"]
        return cls(int(cat["filler_columns"]), cat["max_objects_per_part"], cat["sources_per_object"],
                   int(cat["patch"]["objects"]), cat["id_layout"], cfg["partition"]["max_rows_per_group"])


@dataclass(frozen=True)
class IndexWork:
    """index: where the index input comes from and how it is ordered, read here once: the
    prepare stage's spec (prepare/spec.py ``IndexSpec``) is this with the user's files."""
    source: str             # partition, generate or file
    order: str              # chunk or generation
    sort_memory: str        # index.sort_memory as given (``sort_bytes``: in bytes)
    jobs: int               # index.jobs: generation jobs
    batch_rows: int         # index.file.batch_rows

    @classmethod
    def of(cls, cfg: dict) -> IndexWork:
        ix = cfg["index"]
        return cls(ix["source"], ix["order"], str(ix["sort_memory"]), ix["jobs"], ix["file"]["batch_rows"])

    @property
    def sort_bytes(self) -> int:
        from ..targets import parse_size   # here: psutil's start-up stays out of the prepare jobs
        return parse_size(self.sort_memory)
