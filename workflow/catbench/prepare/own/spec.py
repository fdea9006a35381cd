"""The config's rewrite for the user's own patch (``catalog.patch.file``), before any job:
the file's rows and extent take the place of catalog.patch's objects, ra_width_deg and
dec_height_deg, so every later spec (``prepare/spec.py`` ``PrepareSpec.of``) and the
workflow's sizes see the catalog the files make."""

from __future__ import annotations

import copy
import logging
from pathlib import Path

from ...core.infra.config import ConfigError
from ...core.infra.sources import SourceError, sources
from ...core.sky.copies import MAX_COPIES, n_copies, n_places
from ..ids import source_bits
from ..spec import OwnFiles
from . import manifest, patch
from .patch import KEY, query_columns

log = logging.getLogger(__name__)


def resolve(cfg: dict, results: Path | None = None) -> dict:
    """``cfg`` with the patch file's rows and extent in catalog.patch (objects,
    ra_width_deg, dec_height_deg), every row checked; the config unchanged without a file.
    Refused (ConfigError) before any work: a bad file, a query of the run reading a column
    the file does not map, ids of ``id_layout: source`` over BIGINT. ``results`` (the
    workflow's results folder): the rows are read only when the run's manifest there does not
    describe the files as they are (manifest.py), and it is written then."""
    section = cfg["catalog"]["patch"]["file"]
    if not section["paths"]:
        return cfg
    if cfg["index"]["source"] == "file":
        raise ConfigError(f"config key '{KEY}.paths': index.source: file builds no catalog, so the patch would "
                          "not be read; remove the paths or set index.source: partition")
    if cfg["index"]["source"] == "generate":
        raise ConfigError(f"config key 'index.source': generate makes its own patch; with {KEY} use partition "
                          "(or index.source: file for the index study on the ids alone)")
    if "queries" in cfg["stages"]:
        for q, needs in query_columns(cfg["queries"]["queries"]).items():
            missing = [c for c in needs if c not in section["columns"]]
            if missing:
                raise ConfigError(f"config key '{KEY}.columns': query {q} reads column {missing[0]}, which is not "
                                  f"mapped; map it to your file's column ({KEY}.columns.{missing[0]}: <name>) or "
                                  f"leave {q} out of queries.queries")
    files = OwnFiles.of(section)
    try:
        srcs = sources(section, key=KEY)
        where = manifest.path_of(results, cfg["run"]) if results is not None else None
        doc, why = manifest.check(where, files, srcs) if where is not None else (None, "")
        if doc is None:
            # minutes for millions of rows: the console says which file and why before it
            log.warning("%s: reading and checking every row of %d file(s) (%s bytes)%s", KEY, len(srcs),
                        f"{sum(s.path.stat().st_size for s in srcs):,}", f": {why}" if why else "")
            rows = patch.read_rows(files, srcs)   # looked up here: a test counts the reads
            doc = manifest.write(where, files, rows) if where is not None else \
                {"objects": len(rows.ids), "ra_width_deg": rows.footprint.width,
                 "dec_height_deg": rows.footprint.height, "max_id": int(rows.ids.max())}
    except SourceError as exc:
        raise ConfigError(str(exc)) from None
    out = copy.deepcopy(cfg)
    out["catalog"]["patch"].update({k: doc[k] for k in ("objects", "ra_width_deg", "dec_height_deg")})
    if out["catalog"]["id_layout"] == "source" and n_places(out["catalog"], stop=MAX_COPIES) <= MAX_COPIES:  # else refused anyway
        problem = source_bits(int(doc["max_id"]), n_copies(out["catalog"]))[1]
        if problem:
            raise ConfigError(problem)
    return out
