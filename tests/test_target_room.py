"""Targets that are wrong or run out of room, on the real workflow and CLI: bad target
configs stop `snakemake -n` naming the key, a target that fills during a load is named
with its free bytes and the file, and a resumed load counts its kept data as already on
the target (a real size-limited tmpfs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from support.faultkit import snakemake, tiny_config
from support.indexinput import write_files
from support.paths import CATBENCH, ENV, REPO, SNAKEMAKE
from support.preflight import check
from support.servers import server_procs, tmpfs
from support import preloaded

pytestmark = [pytest.mark.slow, pytest.mark.server]


def _bad_target_cases(tmp: Path):
    f = tmp / "afile"
    f.write_text("x")
    d = tmp / "shared"
    return [
        ("file", {"disk": {"path": str(f)}}, "config key 'targets.disk.path'", "is a file"),
        ("same-dir", {"a": {"path": str(d)}, "b": {"path": str(d)}}, "config key 'targets.b.path'",
         "same directory"),
        ("nested", {"a": {"path": str(d)}, "b": {"path": str(d / "sub")}}, "config key 'targets.b.path'",
         "nested"),
        ("unknown-key", {"disk": {"path": str(d), "size": "1G"}}, "config key 'targets.disk.size'",
         "unknown key"),
        ("wrong-type", {"disk": {"path": 5}}, "config key 'targets.disk.path'", "is not of type"),
        ("no-path", {"disk": {}}, "config key 'targets.disk'", "'path' is a required property"),
        ("uncreatable", {"disk": {"path": "/proc/cbf-nope"}}, "storage target 'disk'", "cannot be created"),
    ]


CASES = ["file", "same-dir", "nested", "unknown-key", "wrong-type", "no-path", "uncreatable"]


def _bad_target_config(tmp_path: Path, case: int) -> tuple[Path, str, str]:
    name, targets, key, why = _bad_target_cases(tmp_path)[case]
    wd = tmp_path / "wd"
    tiny_config(wd, {})
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["targets"] = targets
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    return wd, key, why


@pytest.mark.parametrize("case", range(len(CASES)), ids=CASES)
def test_bad_target_config_is_refused_naming_the_key(tmp_path, case):
    wd, key, why = _bad_target_config(tmp_path, case)
    refusal = check(wd, wd / "config.yaml", "load_index").refusal
    assert key in refusal and why in refusal, refusal
    assert not (wd / "results").exists()
    assert not (tmp_path / "shared").exists()  # no target directory was created


def test_a_bad_target_stops_snakemake_naming_it_before_any_job(tmp_path):
    """The targets' refusal is Snakemake's own error: non-zero, the target named, nothing made."""
    wd, key, why = _bad_target_config(tmp_path, CASES.index("uncreatable"))
    r = snakemake(wd, "-n", "load_index", check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out[-2000:]
    assert key in out and why in out, out[-3000:]
    assert not (wd / "results").exists()


def test_server_tcp_wrong_type_is_refused_naming_the_key(tmp_path):
    wd = tmp_path / "wd"
    tiny_config(wd, {"disk": tmp_path / "disk"}, server={"tcp": "yes"})
    refusal = check(wd, wd / "config.yaml", "load_index").refusal
    assert "config key 'server.tcp': 'yes' is not of type 'boolean'" in refusal, refusal
    assert not (tmp_path / "disk").exists()


def test_a_target_that_fills_during_a_load_is_named_with_its_free_bytes_and_the_file(tmp_path):
    """The room check passes, then something else fills the disk mid-load: the error says out
    of space, names the target, its path and free bytes, and the input file being loaded."""
    files = write_files(tmp_path / "in", "char28", 60, 5000)
    with tmpfs("256M") as small:
        out = tmp_path / "load"
        settings = json.dumps({"innodb_log_file_size": "8M", "innodb_buffer_pool_size": "8M"})
        cmd = [str(CATBENCH), "load-index", "--target", "small", "--path", str(small / "run"),
               "--out", str(out), "--input-dir", str(files[0].parent), "--variant", "char28",
               "--strategy", "one-file-at-a-time", "--optimize-limit-s", "0", "--lookup-count", "10",
               "--repetitions", "1", "--settings-json", settings]
        log = tmp_path / "load.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + 120
            while b"loading 60 files" not in log.read_bytes():
                assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
                time.sleep(0.05)
            subprocess.run(["dd", "if=/dev/zero", f"of={small / 'filler'}", "bs=1M"], capture_output=True)
            assert proc.wait(timeout=120) != 0
        finally:
            proc.kill()
            proc.wait()
        said = log.read_text()
        assert "target small: out of space on" in said and "MiB free" in said, said[-3000:]
        assert re.search(r"part-000\d\d\.tsv", said.split("out of space", 1)[1]), said[-3000:]
        assert not out.exists()
        assert not server_procs(small)


def test_a_resumed_load_counts_its_kept_data_as_already_on_the_target(tmp_path):
    """After a kill the server's data stays for the resume; with less free space than a whole
    load needs but enough for the rest, the re-run resumes instead of refusing."""
    from catbench.core.infra.files import dir_bytes
    from catbench.core.index.table import get_engine
    from catbench.load.estimate import input_rows, load_need
    files = write_files(tmp_path / "in", "char28", 30, 20000)
    given = {"innodb_log_file_size": "8M", "innodb_buffer_pool_size": "8M"}
    in_bytes = sum(f.stat().st_size for f in files)
    need = load_need("char28", "one-file-at-a-time", input_rows(files, in_bytes), in_bytes,
                     {**get_engine("innodb").settings, **given})["need_bytes"]
    with tmpfs(f"{need // 2**20 + 64}M") as small:
        basedir = small / "run" / "catbench-load_index-char28-innodb-one-file-at-a-time"
        cmd = [str(CATBENCH), "load-index", "--target", "small", "--path", str(small / "run"),
               "--out", str(tmp_path / "load"), "--input-dir", str(files[0].parent), "--variant", "char28",
               "--strategy", "one-file-at-a-time", "--optimize-limit-s", "0", "--lookup-count", "10",
               "--repetitions", "1", "--settings-json", json.dumps(given)]
        log = tmp_path / "first.log"
        with open(log, "wb") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + 120
            while b"loaded 2" not in log.read_bytes() and b"loaded 3" not in log.read_bytes():
                assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait()
        kept = dir_bytes(basedir)
        st = os.statvfs(small)
        free = st.f_bavail * st.f_frsize
        leave = need - kept + (8 << 20)          # less than a whole load, more than the rest
        assert kept > (16 << 20) and leave < need
        with open(small / "filler", "wb") as f:
            f.truncate(0)
            f.write(b"\0" * max(0, free - leave))
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        said = r.stdout + r.stderr
        assert r.returncode == 0 and "resuming after" in said, said[-3000:]
        assert json.loads((tmp_path / "load" / "summary.json").read_text())["checksum_ok"]
        assert not server_procs(small)


@pytest.mark.parametrize("held", [0, 300 << 20])
def test_the_runs_estimate_counts_what_a_killed_jobs_folder_already_holds(tmp_path, held):
    """The parse-time check asks a target for each job's need less what that job's own server
    folder already holds there (a killed load resumes in it), so a resume is not refused for
    space it already has."""
    from catbench.core.infra.config import validate
    from catbench.core.server.session import load_server, server_dir
    from catbench.load.estimate import estimate
    from catbench.load.spec import EstimateSpec
    cfg = validate(yaml.safe_load(tiny_config(tmp_path / "wd", {"disk": tmp_path / "t"}).read_text()))
    full = estimate(EstimateSpec.of(cfg))
    job = max((j for j in full["jobs"] if j["job"].startswith("load ")), key=lambda j: j["need_bytes"])
    _, variant, engine, strategy = job["job"].replace("/", " ").split()
    folder = server_dir(Path(full["targets"]["disk"]["path"]), load_server(variant, engine, strategy)) / "data"
    folder.mkdir(parents=True)
    (folder / "ibdata1").write_bytes(b"\0" * min(held, job["need_bytes"] // 2))
    got = estimate(EstimateSpec.of(cfg))["targets"]["disk"]
    others = max(j["need_bytes"] for j in full["jobs"] if j is not job)
    assert got["need_bytes"] == max(others, job["need_bytes"] - min(held, job["need_bytes"] // 2))


def test_the_runs_space_check_counts_its_predict_stages_rung(tmp_path):
    """The default run on a 500 MiB target: its own jobs need ~456 MiB, its rung (twice the rows)
    ~734 MiB. The check once passed and the rung refused after the run's own jobs."""
    with tmpfs("500M") as small:
        cfg = tmp_path / "c.yaml"
        cfg.write_text(yaml.safe_dump({"run": "X", "targets": {"disk": {"path": str(small / "t")}}}))
        r = preloaded.run([str(SNAKEMAKE), "-s", str(REPO / "Snakefile"), "-n", "--configfile", str(cfg),
                            "--cores", "1"], capture_output=True, text=True, cwd=tmp_path, timeout=300, env=ENV)
        said = r.stdout + r.stderr
        assert r.returncode != 0 and "nothing was started" in said, said[-2000:]
        # the room, the need, and the job that needs it
        assert re.search(r"500\.0 MiB free.* needs [0-9.]+ MiB \(estimate, largest job: rung 2's load", said), said[-2000:]
        assert not (small / "t").exists()     # a dry run creates nothing on the target
