"""Security of a real run: what the private servers listen on, where credentials live,
that no password reaches logs/results/provenance, and that identifiers from the config
are validated before they reach SQL, shell commands, my.cnf or paths."""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path

import psutil
import pytest
import yaml
from catbench.core.infra.config import ConfigError, validate
from catbench.core.server.process import Server
from support.faultkit import LOAD_DIR, QUERY_DIR, RUN, copy_workdir, scratch_dirs, snakemake, tiny_config
from support.servers import server_procs
from support.shared_run import ListenWatch, shared_tiny_run
from support.preflight import check

pytestmark = [pytest.mark.slow, pytest.mark.server]

PASSWORD_KV = re.compile(rb"(?i)(password|passwd|pwd)[\"']?\s*[=:]\s*[\"']?([^\s\"',}]+)|identified\s+by\s+\S+")


@pytest.fixture(scope="module")
def tiny_run():
    """The session's tiny run (every stage) on one target,
    socket only (the default), its servers watched while they ran (support/shared_run.py)."""
    return shared_tiny_run()


def _servers_of(seen: dict, sub: str) -> list[dict]:
    return [r for r in seen.values() if any(f"/{sub}/my.cnf" in a for a in r["cmdline"])]


def test_servers_listen_on_a_unix_socket_only(tiny_run):
    load, query = _servers_of(tiny_run["seen"], LOAD_DIR), _servers_of(tiny_run["seen"], QUERY_DIR)
    assert load and query, f"servers not observed while running: {tiny_run['seen']}"
    for rec in load + query:
        assert rec["inet"] == set(), f"a socket-only server listens on TCP: {rec}"
        assert any(u.endswith("mysqld.sock") for u in rec["unix"]), rec


def test_tcp_run_listens_on_127_0_0_1_only(tiny_run, tmp_path):
    """server.tcp: true: the load's server listens on 127.0.0.1 (never 0.0.0.0 or ::) on a
    free port, not the system server's 3306."""
    wd = tmp_path / "wd"
    with scratch_dirs() as (disk, _):
        copy_workdir(tiny_run["wd"], wd)
        tiny_config(wd, {"disk": disk}, server={"tcp": True})
        with ListenWatch(disk) as watch:
            snakemake(wd, "load_index", f"results/{RUN}/load/disk/bigint/innodb/one-file-at-a-time")
        recs = _servers_of(watch.seen, LOAD_DIR)
        assert recs, watch.seen
        for rec in recs:
            assert rec["inet"], f"no TCP listener with server.tcp: true: {rec}"
            assert {ip for ip, _ in rec["inet"]} == {"127.0.0.1"}, rec
            assert 3306 not in {port for _, port in rec["inet"]}
        assert not server_procs(disk)


def _all_files(*roots: Path):
    for root in roots:
        for dirpath, _, names in os.walk(root):
            for n in names:
                p = Path(dirpath) / n
                if p.is_file() and not p.is_symlink():
                    yield p


def test_no_password_in_logs_results_provenance_or_target_dirs(tiny_run):
    """MariaDB runs use unix_socket auth (no password at all); whatever a run writes under
    results/<run>/ and on the target carries no password key/value, and a credentials file,
    if any, is owner-only."""
    roots = [tiny_run["wd"] / "results" / RUN, tiny_run["disk"], tiny_run["wd"] / ".snakemake" / "log"]
    files = list(_all_files(*roots))
    assert len(files) > 50
    hits = []
    for f in files:
        if f.name == "credentials.cnf":
            assert stat.S_IMODE(f.stat().st_mode) & 0o077 == 0, f"{f} is readable by others"
            continue
        for m in PASSWORD_KV.finditer(f.read_bytes()):
            hits.append(f"{f}: {m.group(0)[:80]!r}")
    assert not hits, "\n".join(hits)


def test_generated_password_is_owner_only_and_never_leaks(tmp_path):
    """auth=password (what a MySQL server gets): the random password lives in a 0600 file
    and appears nowhere else: not in the server's command line or environment, my.cnf,
    error log, install log or stdout."""
    with scratch_dirs() as (disk, _):
        s = Server("pw", disk / "srv", {"innodb_buffer_pool_size": "32M"}, auth="password")
        with s:
            pw = s._password()
            assert len(pw) >= 24
            assert stat.S_IMODE(os.stat(s.credentials_file).st_mode) == 0o600
            proc = psutil.Process(s.pid)
            assert pw not in " ".join(proc.cmdline())
            assert pw not in "\0".join(f"{k}={v}" for k, v in proc.environ().items())
        leaks = [str(f) for f in _all_files(disk) if f != s.credentials_file and pw.encode() in f.read_bytes()]
        assert not leaks, leaks


# ---- identifiers from the config ----------------------------------------------------------

def _base(tmp: Path) -> dict:
    tiny_config(tmp, {"disk": tmp / "disk"})
    return yaml.safe_load((tmp / "config.yaml").read_text())


BAD_IDENTIFIERS = [
    # (what, change(cfg), key named)
    ("run ../../etc", lambda c: c.update(run="../../etc"), "run"),
    ("run a/b", lambda c: c.update(run="a/b"), "run"),
    ("run with newline", lambda c: c.update(run="x\ny"), "run"),
    ("run with backquote", lambda c: c.update(run="x`id`"), "run"),
    ("target name SQL", lambda c: c.update(targets={"x; DROP TABLE": {"path": "/tmp/cbf-x"}}), "targets"),
    ("target name backquote", lambda c: c.update(targets={"a`b": {"path": "/tmp/cbf-x"}}), "targets"),
    ("target name dash", lambda c: c.update(targets={"a-b": {"path": "/tmp/cbf-x"}}), "targets"),
    ("target name path", lambda c: c.update(targets={"../x": {"path": "/tmp/cbf-x"}}), "targets"),
    ("setting name SQL", lambda c: c["server"]["settings"].update({"x; DROP": 1}), "server.settings"),
    ("binary shell", lambda c: c["server"].update(binary="/usr/sbin/mariadbd; touch /tmp/cbf-pwned"),
     "server.binary"),
    ("path shell", lambda c: c["targets"]["disk"].update(path="/tmp/$(id)"), "targets.disk.path"),
    ("path space", lambda c: c["targets"]["disk"].update(path="/tmp/a b"), "targets.disk.path"),
    ("path my.cnf injection", lambda c: c["targets"]["disk"].update(path="/tmp/x\ninit-file=/tmp/evil.sql"),
     "targets.disk.path"),
    ("node shell", lambda c: c["targets"]["disk"].update(node="n1; rm -rf /"), "targets.disk.node"),
]


@pytest.mark.parametrize("what,change,key", BAD_IDENTIFIERS, ids=[w for w, _, _ in BAD_IDENTIFIERS])
def test_unsafe_identifiers_are_rejected_naming_the_key(tmp_path, what, change, key):
    cfg = _base(tmp_path)
    change(cfg)
    with pytest.raises(ConfigError, match=rf"config key '{re.escape(key)}'"):
        validate(cfg)


@pytest.mark.parametrize("what", ["target name SQL", "run ../../etc"])
def test_unsafe_identifiers_are_refused_before_any_job(tmp_path, what):
    _, change, key = next(c for c in BAD_IDENTIFIERS if c[0] == what)
    wd = tmp_path / "wd"
    cfg = _base(wd)
    change(cfg)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    refusal = check(wd, wd / "config.yaml", "load_index", dryrun=False).refusal
    assert f"config key '{key}'" in refusal, refusal
    assert not (wd / "results").exists() and not (wd / "disk").exists()


def test_an_unsafe_identifier_stops_the_real_snakemake(tmp_path):
    _, change, key = next(c for c in BAD_IDENTIFIERS if c[0] == "binary shell")
    wd = tmp_path / "wd"
    cfg = _base(wd)
    change(cfg)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    r = snakemake(wd, "load_index", check=False)  # not a dry run: nothing may execute
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert f"config key '{key}'" in out, out[-2000:]
    assert not (wd / "results").exists() and not (wd / "disk").exists()
    assert not Path("/tmp/cbf-pwned").exists()


# ---------------------------------------------------------------- options that name files
def _server_options() -> dict:
    """{option: default} of the installed server (MyRocks loaded when it is installed)."""
    import subprocess
    from catbench.core.infra.settings import option_name
    from catbench.core.server.binaries import find_server_binary, plugin_dir
    binary = find_server_binary()
    args = [binary, "--no-defaults", "--verbose", "--help"]
    pdir = plugin_dir(binary)
    if pdir is not None and (pdir / "ha_rocksdb.so").exists():
        args.insert(2, "--plugin-load-add=ha_rocksdb")
    text = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    body = text.split("Variables (--variable-name=value)", 1)[1].splitlines()
    start = next(i for i, line in enumerate(body) if line.startswith("-----")) + 1
    out = {}
    for line in body[start:]:
        if not line.strip():
            break
        name, _, default = line.partition(" ")
        out[option_name(name)] = default.strip()
    return out


DEFAULT = Path(__file__).resolve().parent.parent / "config" / "config.yaml"
_PATHLIKE_NAME = re.compile(r"file|dir|path|basename|socket|language|log_bin|relay_log|home|debug|tmp|log_ddl|log_isam|log_tc")
_PATHLIKE_VALUE = re.compile(r"/|^[\w.#-]+\.(log|info|pid|sock|index|err|cnf)$|^[\w.-]+:\d+[KMGkmg]")


def test_every_option_that_names_a_file_is_refused_or_confined():
    """The installed server's own option list against resources/server/path_options.yaml: an
    option whose name or default looks like a path is refused, confined to the server's
    directory, or listed as not a path with the reason. A new server's new option fails here."""
    from catbench.core.infra.settings import _RESERVED, _RESERVED_PREFIXES, path_options
    known = path_options()
    listed = known["refused"] | known["confined"] | set(known["not_paths"]) | _RESERVED
    options = _server_options()
    assert len(options) > 300                          # the parse read the whole list
    unlisted = sorted(n for n, d in options.items()
                      if (_PATHLIKE_NAME.search(n) or _PATHLIKE_VALUE.search(d))
                      and n not in listed and not n.startswith(_RESERVED_PREFIXES))
    assert unlisted == [], f"options that may name a file, missing from path_options.yaml: {unlisted}"


@pytest.mark.parametrize("section", ["server", "load"])
@pytest.mark.parametrize("option,value", [
    ("log_slow_query_file", "/tmp/elsewhere/slow.log"),
    ("slow_query_log_file", "../../elsewhere/slow.log"),
    ("log_basename", "x"),
    ("innodb_temp_data_file_path", "../../../elsewhere/ibtmp_x:12M:autoextend"),
    ("innodb_data_file_path", "../ibdata_x:12M:autoextend"),
    ("innodb_data_home_dir", "elsewhere"),
    ("rocksdb_wal_dir", "/tmp/wal"),
    ("rocksdb_datadir", "rocks"),
    ("ft_stopword_file", "/etc/shadow"),
    ("language", "english"),
    ("slave_load_tmpdir", "/tmp"),
    ("log_ddl_recovery", "ddl.log"),
    ("debug", "d:t:o,trace"),
    ("loose-log-basename", "x"),
    ("log_basen", "x"),                                # an abbreviation the server accepts
])
def test_an_option_that_would_write_outside_the_target_is_refused_naming_the_key(section, option, value):
    with pytest.raises(ConfigError, match=re.escape(f"config key '{section}.settings.{option}'")):
        validate({**yaml.safe_load(DEFAULT.read_text()), section: {"settings": {option: value}}})


def test_the_same_options_are_refused_from_the_command_line_before_a_server_starts(tmp_path):
    from catbench.core.infra.settings import ServerError
    for option, value in (("log_slow_query_file", "/tmp/x.log"), ("rocksdb_wal_dir", "/tmp/wal"),
                          ("innodb_temp_data_file_path", "../../x:12M:autoextend")):
        with pytest.raises(ServerError, match=option):
            Server("refuse", tmp_path / "s", {option: value})    # --settings-json reaches this
    assert not (tmp_path / "s").exists()


@pytest.mark.server
def test_a_confined_option_writes_inside_the_servers_own_directory(tmp_path):
    settings = {"slow_query_log": 1, "slow_query_log_file": "every-statement.log", "long_query_time": 0}
    with Server("confined", tmp_path / "target", settings) as s:
        conn = s.connect()
        cur = conn.cursor()
        cur.execute("SELECT 42")
        cur.fetchall()
        conn.close()
        logs = list((tmp_path / "target").rglob("every-statement.log"))
        assert [p.parent for p in logs] == [s.datadir]
        # the server writes a statement's slow-log entry after it answered: a loaded machine
        # can read the file first (seen once with four test workers on two cores)
        deadline = time.monotonic() + 10
        while "SELECT 42" not in logs[0].read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "SELECT 42" in logs[0].read_text()
