"""End to end with the real snakemake: the partition target on a small config, the
results contract, byte-for-byte determinism, lint, and the full-sky DAG size/time."""

import hashlib
import json
import os
import re
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from catbench.core.infra.config import n_groups, validate
from catbench.core.sky.copies import map_batches
from catbench.prepare.catalog import part_copies
from catbench.prepare.chunker import Chunker
from support.faultkit import RUN, copy_workdir, foreground_signals, tiny_config
from support.shared_run import shared_tiny_run
from support import preloaded

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = REPO / ".venv" / "bin"
SNAKEMAKE = str(VENV_BIN / "snakemake")
ENV = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}"}

SMALL = yaml.safe_load((REPO / "tests" / "configs" / "small.yaml").read_text())


def snakemake(workdir: Path, configfile: Path, *args, timeout=600):
    cmd = [SNAKEMAKE, *args, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
           "--configfile", str(configfile)]
    return preloaded.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout,
                          cwd=workdir.parent)


def run_small(root: Path, name: str):
    cfgfile = root / f"{name}.yaml"
    cfgfile.write_text(yaml.safe_dump(SMALL))
    wd = root / name
    t0 = time.monotonic()
    r = snakemake(wd, cfgfile, "partition", "--cores", "2")
    print(f"snakemake partition ({name}): {time.monotonic() - t0:.1f} s")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return wd / "results" / SMALL["run"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    return run_small(root, "a"), run_small(root, "b")


def data_files(res: Path):
    """Every Parquet and TSV data product (benchmark TSVs hold timings: not data)."""
    return sorted(p.relative_to(res) for p in res.rglob("*")
                  if p.suffix in (".parquet", ".tsv") and p.is_file()
                  and p.relative_to(res).parts[0] != "benchmarks")


@pytest.mark.slow
def test_partition_results_contract(two_runs):
    res, _ = two_runs
    obj_parts = sorted((res / "catalog/Object").glob("part-*.parquet"))
    src_parts = sorted((res / "catalog/Source").glob("part-*.parquet"))
    assert len(obj_parts) == len(src_parts) == 7  # 27 copies, 4 per part
    n_obj = sum(pq.ParquetFile(p).metadata.num_rows for p in obj_parts)
    n_src = sum(pq.ParquetFile(p).metadata.num_rows for p in src_parts)
    assert n_obj == 27 * 2000

    chunks = res / "chunks"
    obj_chunks = sorted(p for p in (chunks / "Object").glob("chunk_*.parquet")
                        if "_overlap" not in p.name)
    assert len(obj_chunks) > 10
    ch = Chunker(85, 12, 0.01667)
    total = 0
    for p in obj_chunks:
        cid = int(re.fullmatch(r"chunk_(\d+)\.parquet", p.name).group(1))
        for other in (p.with_suffix(".tsv"), p.with_name(f"chunk_{cid}_overlap.parquet"),
                      p.with_name(f"chunk_{cid}_overlap.tsv")):
            assert other.is_file(), other
        t = pq.read_table(p)
        assert {"chunkId", "subChunkId"} <= set(t.schema.names)
        c, s = ch.locate(t["ra_PS"].to_numpy(), t["decl_PS"].to_numpy())
        assert (c == cid).all() and (s == t["subChunkId"].to_numpy()).all()
        total += t.num_rows
    assert total == n_obj
    src_chunks = sorted((chunks / "Source").glob("chunk_*.parquet"))
    assert sum(pq.ParquetFile(p).metadata.num_rows for p in src_chunks) == n_src
    assert all(p.with_suffix(".tsv").is_file() for p in src_chunks)
    assert all({"chunkId", "subChunkId"} <= set(pq.read_schema(p).names) for p in src_chunks)

    idx = sorted((res / "index/input").glob("part-*.tsv"))
    assert [p.name for p in idx] == [f"part-{k:05d}.tsv" for k in range(8)]
    lines = [ln for p in idx for ln in p.read_text().splitlines()]
    assert len(lines) == n_obj and all(len(ln.split("\t")) == 3 for ln in lines)
    char28 = sorted((res / "index/input_char28").glob("part-*.tsv"))
    assert len(char28) == 8
    assert len(char28[0].read_text().splitlines()[0].split("\t")[0]) == 28

    listing = (chunks / "chunks.tsv").read_text().splitlines()
    header = listing[0].split("\t")
    assert header[:4] == ["chunkId", "object_rows", "source_rows", "overlap_rows"]
    rows = [dict(zip(header, ln.split("\t"))) for ln in listing[1:]]
    assert {int(r["chunkId"]) for r in rows} >= {
        int(re.match(r"chunk_(\d+)", p.name).group(1)) for p in obj_chunks}
    assert sum(int(r["object_rows"] or 0) for r in rows) == n_obj
    assert sum(int(r["source_rows"] or 0) for r in rows) == n_src

    m = json.loads((res / "metrics/partition.json").read_text())
    e2e = m["end_to_end"]
    assert e2e["rows_per_s"] > 0 and e2e["peak_rss_mb"] > 0
    assert e2e["rows"] == n_obj + n_src
    for stage in ("patch", "catalog", "partition_map", "partition_reduce", "index_input"):
        assert m["stages"][stage]["rows_per_s"] is None or m["stages"][stage]["rows_per_s"] > 0
        assert m["stages"][stage]["peak_rss_mb"] > 0
    assert m["stages"]["partition_reduce"]["jobs"] == 3  # 216k rows / 100k per group
    # staging files are temporary: removed once the reduce and index jobs are done
    staging = res / "partition" / "staging"
    assert not staging.exists() or not list(staging.glob("part-*"))


@pytest.mark.slow
def test_two_runs_are_byte_identical(two_runs):
    a, b = two_runs
    fa, fb = data_files(a), data_files(b)
    assert fa == fb
    assert len([f for f in fa if f.suffix == ".parquet"]) > 20
    assert len([f for f in fa if f.suffix == ".tsv"]) > 20
    differ = [str(f) for f in fa if hashlib.sha256((a / f).read_bytes()).digest()
              != hashlib.sha256((b / f).read_bytes()).digest()]
    assert not differ, f"non-deterministic outputs: {differ[:10]}"


@pytest.mark.slow
def test_rerun_is_up_to_date(two_runs, tmp_path):
    res, _ = two_runs
    wd = res.parent.parent
    r = snakemake(wd, wd.parent / "a.yaml", "partition", "-n")
    assert r.returncode == 0, r.stderr
    assert "Nothing to be done" in r.stdout + r.stderr


@pytest.mark.slow
def test_lint():
    r = preloaded.run([SNAKEMAKE, "--lint"], cwd=REPO, capture_output=True, text=True,
                       env=ENV, timeout=120)
    print(r.stdout, r.stderr)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_full_sky_dry_run_builds_dag_quickly(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg["run"] = "fullsky"
    cfg["catalog"]["sky"] = {"ra_min_deg": 0, "ra_max_deg": 360,
                             "dec_min_deg": -90, "dec_max_deg": 90}
    cfg["run_limit_h"] = 1000   # the full sky takes days: planned here, never run
    cfgfile = tmp_path / "full.yaml"
    cfgfile.write_text(yaml.safe_dump(cfg))
    t0 = time.monotonic()
    r = snakemake(tmp_path / "wd", cfgfile, "all", "-n")     # every stage's jobs
    dt = time.monotonic() - t0
    print(f"full-sky 85x12 dry run: {dt:.1f} s")
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    counts = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)\s*$", out, re.M)}
    valid = validate(cfg)
    parts = len(part_copies(valid["catalog"]))
    # map jobs per run of catalog parts (partition.max_rows_per_map), reduce jobs per chunk
    # group: never one job per chunk
    assert parts > 10
    assert counts["catalog_part"] == parts
    assert counts["partition_map"] == len(map_batches(valid)) < parts
    assert counts["partition_reduce"] == n_groups(valid)
    assert 1 < counts["partition_reduce"] < Chunker(85, 12).num_chunks // 10
    assert counts["load_index_run"] >= 1 and counts["queries_mysql"] >= 1
    assert dt < 30


@pytest.mark.slow
def test_user_config_replaces_the_default_targets_and_a_dry_run_creates_nothing(tmp_path):
    # the README's `--configfile my.yaml`: only the user's target, never the default
    # disk/tmpfs ones merged in; and `-n` creates no directory on any target
    target = tmp_path / "mine" / "catbench"
    cfgfile = tmp_path / "my.yaml"
    cfgfile.write_text(yaml.safe_dump({**SMALL, "run": "usercfg", "stages": ["load_index"],
                                       "targets": {"mine": {"path": str(target)}}}))
    defaults = [Path(t["path"]) / "usercfg" for t in
                yaml.safe_load((REPO / "config" / "config.yaml").read_text())["targets"].values()]
    r = snakemake(tmp_path / "wd", cfgfile, "-n", "--cores", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout + r.stderr
    jobs = set(re.findall(r"wildcards: .*target=(\w+)", out))
    assert jobs == {"mine"}, jobs
    jobs_table = dict(re.findall(r"^(\w+)\s+(\d+)\s*$", out, re.M))
    assert "load_index_run" in jobs_table  # the job-count table was read
    assert "queries_mysql" not in jobs_table and "restart_run" not in jobs_table  # stages are the user's too
    assert not target.exists() and not any(d.exists() for d in defaults)


@pytest.mark.slow
def test_the_report_made_again_and_another_configs_results_left_out(tmp_path):
    # the README's next step after a prediction, `snakemake report_html --forcerun report_html`: Snakemake
    # removes the rule's outputs first, and the report's copies it leaves are the report's own. On a copy
    # of the session's finished tiny run (support/shared_run.py), its measuring stages dropped from the
    # config: their results stay on disk and are left out
    shared = shared_tiny_run()
    wd, report = tmp_path / "wd", tmp_path / "wd" / "results" / RUN / "report"
    copy_workdir(shared["wd"], wd)
    cfgfile = tiny_config(wd, {"disk": tmp_path / "t"}, stages=[])
    r = snakemake(wd, cfgfile, "report_html", "--forcerun", "report_html", "--cores", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    assert (report / "index.html").is_file() and (report / "summary.md").is_file()
    # someone else's file in the report's folder: refused and kept (test_report.py, in-process)
    # the target renamed: its results under the old name stay on disk, left out and named
    tiny_config(wd, {"ssd": tmp_path / "t"}, stages=[])
    r = snakemake(wd, cfgfile, "report_html", "--cores", "2")
    assert r.returncode == 0, r.stderr[-3000:]
    md = (report.parent / "tables" / "summary.md").read_text()
    assert "not results of this config" in md and "targets/disk.json" in md
    assert list(json.loads((report / "provenance.json").read_text())["targets"]) == ["ssd"]


def test_a_preloaded_snakemake_run_answers_as_the_command_does(tmp_path):
    """support/preloaded.py: the same output and exit status as the venv's snakemake started
    plainly, in its own session and folder where asked, and an interrupt ends it as it ends one."""
    import signal
    import subprocess

    for args in (["--version"], ["--no-such-option"]):
        plain = subprocess.run([SNAKEMAKE, *args], capture_output=True, text=True, env=ENV, timeout=120)
        forked = preloaded.run([SNAKEMAKE, *args], capture_output=True, text=True, env=ENV, timeout=120)
        # the last line: the usage above it lists sets, whose order each process's hash seed picks
        assert (forked.returncode, forked.stdout, forked.stderr.splitlines()[-1:]) == \
            (plain.returncode, plain.stdout, plain.stderr.splitlines()[-1:])
    assert plain.returncode == 2 and "unrecognized arguments" in plain.stderr
    (tmp_path / "Snakefile").write_text('rule wait:\n    shell: "sleep 60"\n')
    # SIGINT at its default, as in a foreground job: a suite started in the background inherits it ignored
    p = preloaded.popen([SNAKEMAKE, "--cores", "1"], env=ENV, cwd=tmp_path, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=foreground_signals)
    try:
        assert os.getpgid(p.pid) == p.pid and os.readlink(f"/proc/{p.pid}/cwd") == str(tmp_path)
        assert p.poll() is None
        time.sleep(3)
        os.killpg(p.pid, signal.SIGINT)     # as a shell's Ctrl-C reaches a foreground job
        assert p.wait(timeout=60) != 0
    finally:
        p.kill()
