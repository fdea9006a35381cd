"""The query suite as data: ``resources/queries/<NAME>.sql`` files, answers in canonical form.

A query file has a comment header and up to three sections::

    -- LV1: object retrieval by id ...
    -- place: 1                     its place in the suite (unique, sorted: the schema's
                                    queries.queries and QUERY_NAMES are these files' names)
    -- params: object_id            named parameters, written :name in the SQL
    -- defaults: z_min=20, ...       optional: parameters' defaults (numbers; box_deg: a drawn
                                    box's size), under the config's queries.parameters.<Q>
    -- draw: box, sized             optional: what params.py draws from the data: object (an
                                    Object with Sources, one for every such query), box (a box
                                    of box_deg around an Object, where the query returns data),
                                    sized (the box shrinks to the density), radius (radius_deg:
                                    at most partition.overlap_deg, its default; shrinks too)
    -- dispatch: index              mysql engine: index | all | box | subchunks
    -- order: objectId              key column(s) a canonical answer is sorted by
    -- @query                       the logical query (DuckDB over the Parquet chunk files)
    -- @chunk                       one chunk's query ({Object}, {Source}, {ObjectFullOverlap},
                                    {subChunkIds} are filled in by the engine)
    -- @merge                       optional: merges the chunk results, a DuckDB query over
                                    the table ``partials`` (default: concatenate)

An :class:`Answer` is (columns, rows, float32 columns). Two answers agree when columns
and row counts are equal, rows sorted by the order keys match, integers exactly and
doubles within a relative 1e-9. FLOAT (float32) columns are compared at 6 significant
digits, the precision a MySQL/MariaDB server sends them with over the text protocol.
"""

from __future__ import annotations

import decimal
import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.infra.config.registries import placed
from ..core.infra.resources import resources_dir

DISPATCH = ("index", "all", "box", "subchunks")
DRAW = ("object", "box", "sized", "radius")
REL_TOL = 1e-9
DIGITS = 9          # significant digits of a double in the digest
FLOAT32_DIGITS = 6  # ... and of a FLOAT column
_PARAM = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")


class QueryError(RuntimeError):
    """A query file is malformed, a parameter is missing or an answer is wrong."""


@dataclass(frozen=True)
class Query:
    name: str
    title: str
    params: tuple[str, ...]
    dispatch: str
    order: tuple[str, ...]
    sql: str            # logical query
    chunk_sql: str      # per-chunk query (template)
    merge_sql: str | None
    path: Path
    draw: tuple[str, ...] = ()
    default_items: tuple[tuple[str, float], ...] = ()   # a tuple: the query stays hashable

    @property
    def defaults(self) -> dict[str, float]:
        return dict(self.default_items)

    def param_names(self, text: str) -> list[str]:
        return list(dict.fromkeys(_PARAM.findall(text)))


def queries_dir() -> Path:
    return resources_dir() / "queries"


QUERY_NAMES = tuple(placed(queries_dir(), "place"))


def parse_query(path) -> Query:
    path = Path(path)
    name = path.stem
    meta: dict[str, str] = {}
    sections: dict[str, list[str]] = {}
    current = None
    title = ""
    for line in path.read_text().splitlines():
        s = line.strip()
        m = re.fullmatch(r"--\s*@(\w+)\s*", s)
        if m:
            current = m.group(1)
            if current not in ("query", "chunk", "merge"):
                raise QueryError(f"{path}: unknown section @{current} (use @query, @chunk, @merge)")
            sections[current] = []
            continue
        if current is None:
            m = re.fullmatch(r"--\s*(params|dispatch|order|defaults|draw):\s*(.*)", s)
            if m:
                meta[m.group(1)] = m.group(2).strip()
            elif s.startswith("--") and not title:
                title = s.lstrip("- ").strip()
            continue
        if s.startswith("--"):
            continue
        sections[current].append(line)
    for key in ("query", "chunk"):
        if not "".join(sections.get(key, [])).strip():
            raise QueryError(f"{path}: missing the @{key} section")
    dispatch = meta.get("dispatch", "")
    if dispatch not in DISPATCH:
        raise QueryError(f"{path}: '-- dispatch:' must be one of {', '.join(DISPATCH)}, not {dispatch!r}")
    params = tuple(p.strip() for p in meta.get("params", "").split(",") if p.strip())
    order = tuple(p.strip() for p in meta.get("order", "").split(",") if p.strip())
    if not order:
        raise QueryError(f"{path}: '-- order:' names no key column")
    body = {k: "\n".join(v).strip().rstrip(";") for k, v in sections.items()}
    draw, defaults = _draw_header(path, meta, params)
    q = Query(name, title, params, dispatch, order, body["query"], body["chunk"], body.get("merge") or None, path,
              draw, defaults)
    for text in (q.sql, q.chunk_sql):
        unknown = set(q.param_names(text)) - set(params)
        if unknown:
            raise QueryError(f"{path}: parameters {sorted(unknown)} are used but not listed in '-- params:'")
    return q


def _draw_header(path: Path, meta: dict, params: tuple[str, ...]):
    """The ``-- draw:`` words and the ``-- defaults:`` (name, number) pairs of a query file."""
    draw = tuple(w.strip() for w in meta.get("draw", "").split(",") if w.strip())
    unknown = set(draw) - set(DRAW)
    if unknown:
        raise QueryError(f"{path}: '-- draw:' words must be among {', '.join(DRAW)}, not {sorted(unknown)}")
    defaults = []
    for item in (i.strip() for i in meta.get("defaults", "").split(",") if i.strip()):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in params and key != "box_deg":
            raise QueryError(f"{path}: '-- defaults:' names {key!r}, which '-- params:' does not list")
        try:
            defaults.append((key, float(value)))
        except ValueError:
            raise QueryError(f"{path}: '-- defaults:' {item!r} is no name=number") from None
    if "box" in draw and "box_deg" not in dict(defaults):
        raise QueryError(f"{path}: '-- draw: box' needs a box_deg in '-- defaults:'")
    return draw, tuple(defaults)


def load_suite(names=QUERY_NAMES, directory=None) -> dict[str, Query]:
    d = Path(directory) if directory else queries_dir()
    out = {}
    for n in names:
        p = d / f"{n}.sql"
        if not p.exists():
            raise QueryError(f"query {n}: no file {p}")
        out[n] = parse_query(p)
    return out


def bind(query: Query, text: str, params: dict, style: str) -> tuple[str, dict]:
    """SQL with :name turned into the driver's placeholder, and the parameters it uses."""
    names = query.param_names(text)
    missing = [n for n in names if n not in params]
    if missing:
        raise QueryError(f"query {query.name}: no value for parameter(s) {', '.join(missing)}")
    if style == "pyformat":       # mysql.connector
        sql = _PARAM.sub(lambda m: f"%({m.group(1)})s", text)
    elif style == "dollar":       # duckdb
        sql = _PARAM.sub(lambda m: f"${m.group(1)}", text)
    else:
        raise ValueError(style)
    return sql, {n: params[n] for n in names}


# ---- answers -----------------------------------------------------------------------------

@dataclass
class Answer:
    columns: list[str]
    rows: list[tuple]
    float32: set[str] = field(default_factory=set)
    seconds: float | None = None     # the query's own time where the engine ran it on a helper thread

    def canonical(self, order=()) -> "Answer":
        """Plain Python values, FLOAT columns at 6 digits, rows sorted by ``order``."""
        f32 = [c in self.float32 for c in self.columns]
        rows = [tuple(_plain(v, f) for v, f in zip(r, f32)) for r in self.rows]
        idx = [self.columns.index(k) for k in order if k in self.columns]
        rows.sort(key=lambda r: tuple(_sort_key(r[i]) for i in idx) + tuple(_sort_key(v) for v in r))
        return Answer(list(self.columns), rows, set(self.float32))

    def digest(self) -> str:
        """sha256 of the canonical text (call on a canonical answer)."""
        h = hashlib.sha256()
        h.update(("\t".join(c.lower() for c in self.columns) + "\n").encode())
        for r in self.rows:
            h.update(("\t".join(_fmt(v) for v in r) + "\n").encode())
        return h.hexdigest()

    def summary(self, order=()) -> str:
        """A short text: the value of a one-cell answer, else rows and the key range."""
        if len(self.rows) == 1 and len(self.columns) == 1:
            return f"{self.columns[0]}={_fmt(self.rows[0][0])}"
        text = f"{len(self.rows)} rows"
        keys = [k for k in order if k in self.columns]
        if self.rows and keys:
            i = self.columns.index(keys[0])
            text += f", {keys[0]} {_fmt(self.rows[0][i])}..{_fmt(self.rows[-1][i])}"
        return text

    def to_json(self) -> dict:
        return {"columns": self.columns, "float32": sorted(self.float32),
                "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_json(cls, d: dict) -> "Answer":
        return cls(list(d["columns"]), [tuple(r) for r in d["rows"]], set(d.get("float32", [])))


def _plain(v, float32: bool):
    if isinstance(v, decimal.Decimal):
        v = int(v) if v == v.to_integral_value() else float(v)
    elif isinstance(v, (bytes, bytearray)):
        v = v.decode()
    elif hasattr(v, "item") and not isinstance(v, (int, float, str)):  # numpy scalars
        v = v.item()
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, float) and float32 and math.isfinite(v):
        v = float(f"{v:.{FLOAT32_DIGITS}g}")
    return v


def _sort_key(v):
    return (v is None, 0 if v is None else (str(v) if isinstance(v, str) else v))


def _fmt(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        return f"{v:.{DIGITS}g}"
    return str(v)


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return False
        return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=0.0) or float(a) == float(b)
    return a == b


def compare(name: str, a: Answer, b: Answer, what_a: str = "a", what_b: str = "b") -> str | None:
    """None when two canonical answers agree, else a message naming the query and both answers."""
    def show(ans: Answer) -> str:
        head = ans.rows[:3]
        return f"{len(ans.rows)} rows {ans.columns} first {head}"
    problem = None
    if [c.lower() for c in a.columns] != [c.lower() for c in b.columns]:
        problem = "different columns"
    elif len(a.rows) != len(b.rows):
        problem = "different row counts"
    else:
        for i, (ra, rb) in enumerate(zip(a.rows, b.rows)):
            for c, x, y in zip(a.columns, ra, rb):
                if not _same(x, y):
                    problem = f"row {i} column {c}: {x!r} != {y!r}"
                    break
            if problem:
                break
    if problem is None:
        return None
    return (f"query {name}: answers differ ({problem}): {what_a} gave {show(a)}; "
            f"{what_b} gave {show(b)}")
