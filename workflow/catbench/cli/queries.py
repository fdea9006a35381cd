"""CLI sub-commands of the query stage: ``catbench queries`` and ``catbench queries-check``.

Hook into the main CLI with ``add_subcommands(subparsers)``; each sets ``func`` (called
with the parsed args, returns an exit code).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..core.infra.config import ConfigError, validate
from ..core.infra.targets import TargetError
from ..core.server.loaddata import LoadError
from ..core.server.process import ServerError
from ..query.chunk_tables import ChunkLoadError
from ..query.query_engines import QUERY_ENGINES, QueryLocation, run_query_engine
from ..query.suite import QueryError
from .common import config_arg, guarded, measured, overrides, read_config, section_flags

log = logging.getLogger(__name__)
COMMANDS = ("queries", "queries-check")
EXPECTED = (QueryError, ChunkLoadError, LoadError, ServerError, TargetError, ConfigError, OSError, ValueError)


def _config(text: str) -> dict:
    return config_arg(text) if text.lstrip().startswith("{") else read_config(text)


def _json_arg(text: str | None, what: str):
    if not text:
        return None
    try:
        p = Path(text)
        return json.loads(p.read_text() if not text.lstrip().startswith("{") and p.exists() else text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"{what} is not valid JSON ({exc})")


def cmd_queries(args) -> int:
    """Run the query suite (cold, warm, concurrency) on one target (mysql) or over the
    Parquet chunk files (duckdb); writes <out>/{results.parquet,summary.json,answers.json}."""
    from ..query.run_queries import QueryPaths
    from ..query.spec import QuerySpec
    cfg = validate(overrides(args, _config(args.config)), whole=False)
    results = Path(args.results)
    spec = QuerySpec.of(cfg, dict(params=_json_arg(args.params_json, "--params-json"),
                                  settings=_json_arg(args.settings_json, "--settings-json"),
                                  time_limit_min=args.time_limit_min, engine=args.query_engine,
                                  threads=args.threads, mem_mb=args.mem_mb))
    paths = QueryPaths(results / "chunks", results / "index" / "input", Path(args.out))
    if QUERY_ENGINES[args.query_engine].on_target:
        if not args.target or not args.path:
            raise SystemExit(f"--query-engine {args.query_engine} needs --target and --path")
        where = QueryLocation(args.target, Path(args.path), args.keep_data)
    else:
        where = QueryLocation(args.target or "parquet")
    s = run_query_engine(args.query_engine, spec, paths, where)
    warm = {q: round(v["warm"]["p50_s"], 6) for q, v in s["stats"].items() if "warm" in v}
    print(json.dumps({"target": s["target"], "query_engine": s["query_engine"], "cold_method": s["cold_method"],
                      "warm_p50_s": warm, "answers": s["answers"]}, default=str))
    return 0


def cmd_queries_check(args) -> int:
    """Compare every query's answer across targets and engines; fails naming the query."""
    from ..query.check import check_answers
    r = check_answers(args.inputs, args.out)
    print(json.dumps({"ok": r["ok"], "queries": {q: v["agree"] for q, v in r["queries"].items()}}))
    return 0


def add_subcommands(subparsers) -> None:
    p = subparsers.add_parser("queries", help="query suite on one target (mysql, lsdb) or the Parquet files (duckdb)",
                              description=cmd_queries.__doc__)
    p.add_argument("--query-engine", choices=tuple(QUERY_ENGINES), default="mysql")
    p.add_argument("--target", help="storage target name (an engine on a target, mysql: required; one over "
                   "the Parquet files, duckdb: a label, default 'parquet')")
    p.add_argument("--path", help="directory on the target for the private server (an engine on a target)")
    p.add_argument("--results", required=True, help="results/<run> directory (chunks/, index/input/)")
    p.add_argument("--config", required=True, help="config YAML file or JSON text")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--params-json", help="query parameters (JSON text or file) instead of drawing them")
    p.add_argument("--settings-json", help="server options as a JSON object (default server.settings)")
    p.add_argument("--time-limit-min", type=float, help="stop a query that would end past this many minutes "
                   "from the start, with a clear error (the workflow passes its rule's runtime, from the plan)")
    p.add_argument("--threads", type=int, help="CPUs the job was given (the lsdb engine's Dask workers share them)")
    p.add_argument("--mem-mb", type=int, help="memory the job was given, MiB (the lsdb engine's workers share it)")
    g = p.add_argument_group("overrides of config keys (default: the key's value in --config)")
    section_flags(p, "queries", group=g)
    section_flags(p, "server", "server-", lists=False, group=g)
    p.add_argument("--keep-data", action="store_true", help="keep the server datadir (lsdb: the HATS catalogs, "
                   "reused by a later run that keeps them) afterwards")
    p.set_defaults(func=guarded(measured(cmd_queries), EXPECTED, "queries"))

    p = subparsers.add_parser("queries-check", help="cross-check query answers of all targets and engines",
                              description=cmd_queries_check.__doc__)
    p.add_argument("--inputs", nargs="+", required=True, help="output directories of `catbench queries`")
    p.add_argument("--out", required=True, help="check result (JSON)")
    p.set_defaults(func=guarded(cmd_queries_check, EXPECTED, "queries-check"))
