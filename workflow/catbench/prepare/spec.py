"""The prepare stage's knobs, read once from the validated config (its ``seed``, ``run``,
``catalog``, ``partition`` and ``index`` sections, the schema's defaults filled in at the CLI):
the catalog generator, the id layouts, the partition, the index input and the user's own files
read this, never the config."""

from __future__ import annotations

from dataclasses import dataclass

from ..core.infra.jobs.shapes import CatalogShape, IndexWork
from ..core.sky.geometry import Geometry

PAGE_DEFAULT = "16K"   # InnoDB's page when the settings name none


@dataclass(frozen=True)
class OwnFiles:
    """A section naming the user's own files (index.file, catalog.patch.file)."""
    section: dict            # as validated: core/infra/sources.sources() lists its paths, the manifest compares it
    paths: tuple[str, ...]
    columns: dict            # objectId, ra, dec (and the patch's optional columns) -> the file's names
    drop: tuple[str, ...]    # catalog.patch.file: columns not carried (index.file has none)
    flux_unit: str | None    # catalog.patch.file: its fluxes' unit
    batch_rows: int | None   # index.file: rows a batch (the patch file is read whole)

    @classmethod
    def of(cls, section: dict) -> OwnFiles:
        """From a validated index.file or catalog.patch.file section (each has only its own keys)."""
        return cls(section, tuple(section["paths"]), dict(section["columns"]), tuple(section.get("drop") or ()),
                   section.get("flux_unit"), section.get("batch_rows"))

    def roles(self) -> dict[str, str]:
        """{role: the file's column name} for objectId, ra, dec."""
        return {r: self.columns[r] for r in ("objectId", "ra", "dec")}


@dataclass(frozen=True)
class PatchShape:
    """The synthetic base patch (catalog.patch: objects, extent, clusters)."""
    objects: int
    ra_width_deg: float
    dec_height_deg: float
    cluster_count: int
    cluster_fraction: float
    cluster_sigma_deg: float


@dataclass(frozen=True)
class CatalogSpec(CatalogShape):
    """The catalog: its shape as the jobs' sizing reads it (filler columns, parts, Sources per
    Object, ids, a reduce group's bound), the seed, the patch, where the copies go."""
    seed: int
    patch: PatchShape
    source_scatter_arcsec: float
    density_model: str
    ra_min_deg: float
    ra_max_deg: float
    patch_file: OwnFiles
    section: dict            # the catalog section, for core/sky/copies (copy_layout, n_copies, part_copies)

    @classmethod
    def of(cls, cfg: dict) -> CatalogSpec:
        cat = cfg["catalog"]
        p, sky = cat["patch"], cat["sky"]
        shape = PatchShape(int(p["objects"]), float(p["ra_width_deg"]), float(p["dec_height_deg"]),
                           p["cluster_count"], p["cluster_fraction"], p["cluster_sigma_deg"])
        return cls(**vars(CatalogShape.of(cfg)), seed=int(cfg["seed"]), patch=shape,
                   source_scatter_arcsec=cat["source_scatter_arcsec"], density_model=cat["density"]["model"],
                   ra_min_deg=float(sky["ra_min_deg"]), ra_max_deg=float(sky["ra_max_deg"]),
                   patch_file=OwnFiles.of(p["file"]), section=cat)


@dataclass(frozen=True)
class PartitionSpec:
    """The partition: its geometry, a reduce group's bound and the index input's files."""
    geometry: Geometry
    max_rows_per_group: int
    index_files: int


@dataclass(frozen=True)
class IndexSpec(IndexWork):
    """The index input as the jobs' sizing reads it (where its rows come from, their order,
    the jobs, DuckDB's memory) with the user's files."""
    file: OwnFiles           # index.file (source: file)


@dataclass(frozen=True)
class PrepareSpec:
    """Everything the prepare stage reads of a run's config."""
    run: str
    catalog: CatalogSpec
    partition: PartitionSpec
    index: IndexSpec

    @classmethod
    def of(cls, cfg: dict) -> PrepareSpec:
        """From a validated config."""
        p, catalog = cfg["partition"], CatalogSpec.of(cfg)
        geometry = Geometry(p["num_stripes"], p["num_sub_stripes_per_stripe"], p["overlap_deg"])
        return cls(cfg["run"], catalog, PartitionSpec(geometry, catalog.max_rows_per_group, p["index_files"]),
                   IndexSpec(**vars(IndexWork.of(cfg)), file=OwnFiles.of(cfg["index"]["file"])))


@dataclass(frozen=True)
class PoolSetup:
    """The loads' buffer pool and page (bytes; load.settings over server.settings) and what
    the report shows beside the working set (the id layout, the arrival order)."""
    pool_bytes: int
    page_bytes: int
    id_layout: str | None = None
    order: str | None = None

    @classmethod
    def of(cls, cfg: dict) -> PoolSetup:
        from ..core.infra.targets import parse_size   # here: psutil's start-up stays out of the map jobs
        settings = {**cfg["server"]["settings"], **cfg["load"]["settings"]}
        # the user's own ids (index.source: file) have no synthetic layout: the sample is theirs
        layout = "own" if cfg["index"]["source"] == "file" else cfg["catalog"]["id_layout"]
        return cls(parse_size(str(settings.get("innodb_buffer_pool_size", "128M"))),
                   parse_size(str(settings.get("innodb_page_size", PAGE_DEFAULT))), layout, cfg["index"]["order"])

    def as_dict(self) -> dict:
        return {"pool_bytes": self.pool_bytes, "page_bytes": self.page_bytes, "id_layout": self.id_layout,
                "order": self.order}
