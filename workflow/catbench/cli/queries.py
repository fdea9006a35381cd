"""CLI sub-commands of the query stage: ``catbench queries`` and ``catbench queries-check``.

Hook into the main CLI with ``add_subcommands(subparsers)``; each sets ``func`` (called
with the parsed args, returns an exit code).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ..core.infra.config import ConfigError
from ..core.infra.targets import TargetError
from ..core.server.loaddata import LoadError
from ..core.server.process import ServerError
from ..query.chunk_tables import ChunkLoadError
from ..query.query_engines import QUERY_ENGINES, Where, run_query_engine
from ..query.suite import QUERY_NAMES, QueryError
from .common import guarded, measured, read_config

log = logging.getLogger(__name__)
COMMANDS = ("queries", "queries-check")
EXPECTED = (QueryError, ChunkLoadError, LoadError, ServerError, TargetError, ConfigError, OSError, ValueError)


def _config(text: str) -> dict:
    if text.lstrip().startswith("{"):
        from ..core.infra.config import validate
        return validate(json.loads(text), whole=False)
    return read_config(text)


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
    cfg = _config(args.config)
    results = Path(args.results)
    conc = {}
    if args.streams is not None:
        conc["streams"] = args.streams
    if args.concurrency_seconds is not None:
        conc["seconds"] = args.concurrency_seconds
    spec = QuerySpec.of(cfg, dict(repetitions=args.repetitions, concurrency=conc or None, names=args.queries,
                                  cold=False if args.no_cold else None,
                                  params=_json_arg(args.params_json, "--params-json"),
                                  settings=_json_arg(args.settings_json, "--settings-json"),
                                  binary=args.server_binary, start_timeout=args.start_timeout))
    paths = QueryPaths(results / "chunks", results / "index" / "input", Path(args.out))
    if QUERY_ENGINES[args.query_engine].on_target:
        if not args.target or not args.path:
            raise SystemExit(f"--query-engine {args.query_engine} needs --target and --path")
        where = Where(args.target, Path(args.path), args.keep_data)
    else:
        where = Where(args.target or "parquet")
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
    p = subparsers.add_parser("queries", help="query suite on one target (mysql) or the Parquet files (duckdb)",
                              description=cmd_queries.__doc__)
    p.add_argument("--query-engine", choices=tuple(QUERY_ENGINES), default="mysql")
    p.add_argument("--target", help="storage target name (an engine on a target, mysql: required; one over "
                   "the Parquet files, duckdb: a label, default 'parquet')")
    p.add_argument("--path", help="directory on the target for the private server (an engine on a target)")
    p.add_argument("--results", required=True, help="results/<run> directory (chunks/, index/input/)")
    p.add_argument("--config", required=True, help="config YAML file or JSON text")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--repetitions", type=int, help="runs per query and cache state (default queries.repetitions)")
    p.add_argument("--queries", nargs="*", choices=QUERY_NAMES, help="subset of the suite (default all)")
    p.add_argument("--no-cold", action="store_true", help="skip the cold runs")
    p.add_argument("--streams", type=int, help="HV2 streams of the concurrency run (0 skips it)")
    p.add_argument("--concurrency-seconds", type=float, help="duration of each concurrency phase")
    p.add_argument("--params-json", help="query parameters (JSON text or file) instead of drawing them")
    p.add_argument("--settings-json", help="server options as a JSON object (default server.settings)")
    p.add_argument("--server-binary", help="mariadbd/mysqld to use (default server.binary or search)")
    p.add_argument("--start-timeout", type=float, help="seconds a server start may take (default "
                   "server.start_timeout_s)")
    p.add_argument("--keep-data", action="store_true", help="keep the server datadir afterwards")
    p.set_defaults(func=guarded(measured(cmd_queries), EXPECTED, "queries"))

    p = subparsers.add_parser("queries-check", help="cross-check query answers of all targets and engines",
                              description=cmd_queries_check.__doc__)
    p.add_argument("--inputs", nargs="+", required=True, help="output directories of `catbench queries`")
    p.add_argument("--out", required=True, help="check result (JSON)")
    p.set_defaults(func=guarded(cmd_queries_check, EXPECTED, "queries-check"))
