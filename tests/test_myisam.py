"""MyISAM (load.engines: myisam), Qserv's other director-index engine, with real private
servers: bulk is refused with its reason; a resumed load never keeps rows its ledger does not
name (every strategy's load and a repeated key on it: test_engines.py)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from catbench.core.infra.config import section
from catbench.core.index.input import scan_file
from catbench.core.index.table import DATABASE, ENGINES, IndexDestination, get_variant, load_file
from catbench.core.server.process import Server
from catbench.load.job import LoadOptions
from catbench.load.ledger import Ledger, ResumeState, load_key
from catbench.load.strategies import REGISTRY, STRATEGIES, load_pairs
from support.indexinput import write_files

pytestmark = pytest.mark.server
MYISAM = [s for s in STRATEGIES if REGISTRY[s].supports("myisam")]
VENV_BIN = Path(sys.executable).parent


def test_every_strategy_but_bulk_runs_on_myisam():
    assert set(MYISAM) == set(STRATEGIES) - {"bulk"}
    pairs, skipped = load_pairs(["sorted", "bulk"], ["myisam"])
    assert pairs == [("myisam", "sorted")]
    assert skipped[0]["strategy"] == "bulk" and "unique" in skipped[0]["reason"]
    assert not ENGINES["myisam"].transactional and ENGINES["innodb"].transactional


def _cmd(files, target: Path, out: Path) -> list[str]:
    return [str(VENV_BIN / "catbench"), "load-index", "--target", "tmpdisk", "--path", str(target),
            "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "bigint", "--engine", "myisam",
            "--strategy", "one-file-at-a-time", "--optimize-limit-s", "0", "--lookup-count", "100", "--repetitions", "1"]


@pytest.mark.parametrize("in_flight", [True, False])
def test_a_resumed_load_keeps_only_the_rows_its_ledger_names(root, in_flight):
    """A load interrupted after 5 committed files, as a kill leaves it on MyISAM: with the
    6th file's rows in the table too (in flight, not in the ledger) the resume starts again
    from an empty table; with exactly the ledger's rows it continues. Both end with exactly
    the input's rows."""
    name = f"resume-{in_flight}"
    files = write_files(root / "in" / name, "bigint", 12, 2000)
    infos = [scan_file(f, get_variant("bigint")) for f in files]
    rows, checksum = sum(i.rows for i in infos), sum(i.checksum for i in infos)
    target, out = root / f"{name}-target", root / "results" / name
    basedir = target / "catbench-load_index-bigint-myisam-one-file-at-a-time"
    _interrupted(files, basedir, in_flight)
    r = subprocess.run(_cmd(files, target, out), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    rep = s["repetitions"][0]
    if in_flight:
        assert "rows of a file in flight" in rep["resume_discarded"] and rep["resumed_at_file"] == 0
    else:
        assert "resume_discarded" not in rep and rep["resumed_at_file"] == 5
    assert s["rows"] == rows and s["checksum_ok"] and s["checksum_table"] == checksum
    assert not basedir.exists()


def _interrupted(files, basedir: Path, in_flight: bool):
    """The server data and resume state an interrupted one-file-at-a-time MyISAM load leaves: 5
    files in table and ledger, and (``in_flight``) the 6th file's rows in the table only."""
    load = section("load", {"optimize_limit_s": 0, "lookup_count": 100, "repetitions": 1})
    settings = {**ENGINES["myisam"].settings, **section("server", None)["settings"], **(load["settings"] or {})}
    files = [Path(f).absolute() for f in files]
    options = LoadOptions.of(load).check().as_dict()
    variant, table = get_variant("bigint"), "bigint_one_file_at_a_time"
    with Server("tmpdisk", basedir, settings) as srv:
        conn = srv.connect()
        conn.cursor().execute(f"CREATE DATABASE `{DATABASE}`")
        conn.cursor().execute(variant.ddl(table, DATABASE, "MyISAM"))
        ledger = Ledger(DATABASE, table, 0, files)
        ledger.create(conn)
        for f in files[:6 if in_flight else 5]:
            info = scan_file(f, variant)
            load_file(conn, IndexDestination(table, variant, tuple(files), DATABASE), f, info.rows)
            if f != files[5]:
                ledger.record(conn.cursor(), info, 0.0, 1.0)
                conn.commit()
        conn.close()
    ResumeState(basedir / "resume.json", load_key(files, "bigint", "one-file-at-a-time", table, options, settings)).begin(0)
