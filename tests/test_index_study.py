"""The index study alone: the index input generated in parts and merged, the
cost estimate and the free-space refusal before any job starts, and the preset
config/index-study.yaml end to end through the real snakemake at a tiny scale."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from catbench.core.infra.config import validate
from catbench.core.index.input import list_input
from catbench.load import estimate as est
from catbench.load.spec import EstimateSpec
from catbench.core.infra.config import load_schema
from catbench.prepare.index_order import written_in_order
from catbench.prepare.index_only import generate_index, merge_parts, part_files
from catbench.prepare.spec import PrepareSpec
from support.paths import ENV, REPO, VENV_BIN, snakemake
from support.preflight import check
from support.servers import kill_servers, server_procs
from support.runs import REPORT

PRESET = yaml.safe_load((REPO / "config" / "index-study.yaml").read_text())
SCHEMA = load_schema()


def _small(**over) -> dict:
    """The preset on a narrow band of sky: a few thousand rows."""
    cfg = yaml.safe_load(yaml.safe_dump(PRESET))
    cfg["catalog"]["patch"]["objects"] = 50
    cfg["catalog"]["sky"] = {"ra_min_deg": 0, "ra_max_deg": 40, "dec_min_deg": -4, "dec_max_deg": 4}
    cfg["partition"]["index_files"] = 7
    for k, v in over.items():   # a section is merged, targets are replaced
        cfg[k] = {**cfg[k], **v} if isinstance(v, dict) and isinstance(cfg.get(k), dict) and k != "targets" else v
    return cfg


def _files(folder: Path) -> dict:
    """The input files and the manifest (not Snakemake's .snakemake_timestamp of a directory output)."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if not p.name.startswith(".")}


@contextlib.contextmanager
def tmpfs(size: str):
    """A size-limited tmpfs (root only), unmounted on every exit path."""
    d = Path(tempfile.mkdtemp(prefix="cb-ix-"))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(d)], capture_output=True)
    if r.returncode:
        d.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield d
    finally:
        subprocess.run(["umount", str(d)], check=False)
        d.rmdir()


# ---- the input in parts ---------------------------------------------------------------------

def test_parts_split_every_file_once():
    for n, parts in ((7, 3), (64, 5), (3, 8)):
        got = [k for p in range(parts) for k in part_files(n, p, parts)]
        assert got == list(range(n))
    with pytest.raises(ValueError, match="part 3 is not in 0..2"):
        part_files(7, 3, 3)


@pytest.mark.slow
def test_parts_merged_are_the_single_jobs_bytes(tmp_path):
    cfg = validate(_small())
    whole = generate_index(PrepareSpec.of(cfg), 7, tmp_path / "one" / "input", tmp_path / "one" / "input_char28")
    staging = []
    for part in range(3):
        d = tmp_path / f"part-{part}"
        generate_index(PrepareSpec.of(cfg), 7, d / "input", d / "input_char28", part=part, parts=3)
        staging.append(d)
    r = merge_parts(staging, tmp_path / "m" / "input", tmp_path / "m" / "input_char28")
    assert (r["files"], r["rows"]) == (7, whole["rows"])
    for sub in ("input", "input_char28"):
        assert _files(tmp_path / "m" / sub) == _files(tmp_path / "one" / sub)   # manifests included
    assert len(list_input(tmp_path / "m" / "input")) == 7
    # a part's folder that lost its manifest is named
    (staging[1] / "input" / "manifest.json").unlink()
    with pytest.raises(ValueError, match=r"part-1/input/manifest.json: unreadable"):
        merge_parts(staging, tmp_path / "x" / "input", tmp_path / "x" / "input_char28")


# ---- the estimate -----------------------------------------------------------------------------

def test_model_covers_every_variant_and_strategy():
    strategies = SCHEMA["properties"]["load"]["properties"]["strategies"]["items"]["enum"]
    variants = SCHEMA["properties"]["load"]["properties"]["variants"]["items"]["enum"]
    assert set(est.MODEL) == {(v, s) for v in variants for s in strategies}
    assert all(f.peak >= f.table > 0 for f in est.MODEL.values())


def test_estimate_grows_with_the_knob_and_reads_a_written_manifest(tmp_path):
    small, big = validate(_small()), validate(_small(catalog={"patch": {"objects": 5000}}))
    a, b = est.estimate(EstimateSpec.of(small)), est.estimate(EstimateSpec.of(big))
    assert b["rows"] == 100 * a["rows"]
    job = {j["job"]: j for j in a["jobs"]}
    assert set(job) >= {"fio", "load char28/innodb/one-file-at-a-time", "load bigint/innodb/deferred-pk"}
    # the largest job grows by the model's bytes per row: the peak, two input copies, the margin
    assert b["targets"]["disk"]["largest_job"] == a["targets"]["disk"]["largest_job"] == "load char28/innodb/sorted"
    line = est.input_row_bytes(EstimateSpec.of(small), "char28")
    per_row = est.MARGIN * (est.MODEL[("char28", "sorted")].peak + 2 * line)
    grown = b["targets"]["disk"]["need_bytes"] - a["targets"]["disk"]["need_bytes"]
    assert grown == pytest.approx(per_row * (b["rows"] - a["rows"]), rel=0.01)
    # the input already written: its manifest's bytes, not the model's bound
    res = tmp_path / "results"
    generate_index(PrepareSpec.of(small), 7, res / "index" / "input", res / "index" / "input_char28")
    c = est.estimate(EstimateSpec.of(small), res)
    real = sum(p.stat().st_size for p in (res / "index" / "input_char28").glob("*.tsv"))
    assert c["input_bytes"]["char28"] == real and c["input_measured"]["char28"]
    assert real <= a["input_bytes"]["char28"]   # the model is an upper bound of a line
    assert any("index rows" in line for line in est.lines(c))


def test_estimate_command_prints_and_writes(tmp_path):
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump(_small()))
    r = subprocess.run([str(VENV_BIN / "catbench"), "estimate", "--config", str(cfgfile), "--out",
                        str(tmp_path / "e.json")], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "estimate: target disk" in r.stdout and "load char28/innodb/sorted" in r.stdout
    doc = json.loads((tmp_path / "e.json").read_text())
    assert doc["targets"]["disk"]["need_bytes"] > 0 and doc["rows"] > 0


# ---- refused before any job starts ---------------------------------------------------------------

@pytest.mark.slow
def test_a_target_too_small_for_the_estimate_is_refused_before_any_job(tmp_path):
    with tmpfs("20M") as small:
        wd = tmp_path / "wd"
        wd.mkdir()
        cfgfile = tmp_path / "c.yaml"
        cfgfile.write_text(yaml.safe_dump(_small(targets={"big": {"path": str(tmp_path / "big")},
                                                          "small": {"path": str(small / "cb")}})))
        r = check(wd, cfgfile, "--cores", "1")
        refusal = r.refusal
        assert "nothing was started" in refusal and "storage target 'small'" in refusal, r
        assert f"({small / 'cb' / 'index-study'})" in refusal and "MiB free but this step needs" in refusal
        assert "largest job: load char28/innodb/" in refusal and "storage target 'big'" not in refusal
        assert "estimate: target small" in r.said
        assert not (wd / "results").exists() and not (small / "cb").exists()
        # --keep-going: a warning; the small target's jobs fail on their own, the others run
        r = check(wd, cfgfile, "--cores", "1", "--keep-going")
        assert r.refusal == "", r
        assert "catbench: warning: storage target 'small'" in r.said
        # index.space_check: false lets it through (the estimate is still printed)
        cfgfile.write_text(yaml.safe_dump(_small(targets={"small": {"path": str(small / "cb")}},
                                                 index={"space_check": False})))
        r = check(wd, cfgfile, "--cores", "1")
        assert r.refusal == "" and "estimate: target small" in r.said


@pytest.mark.slow
def test_generate_with_queries_is_refused_naming_the_key(tmp_path):
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump(_small(stages=["load_index", "queries"])))
    assert "config key 'index.source'" in check(tmp_path / "wd", cfgfile, "--cores", "1").refusal


@pytest.mark.slow
def test_preset_plans_no_catalog_and_no_chunks(tmp_path):
    cfgfile = tmp_path / "c.yaml"
    cfgfile.write_text(yaml.safe_dump({**PRESET, "index": {**PRESET["index"], "jobs": 3}}))
    r = snakemake(tmp_path / "wd", cfgfile, "-n", "--cores", "2")
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    jobs = dict(line.split()[:2] for line in out.splitlines() if len(line.split()) == 2
                and line.split()[1].isdigit())
    assert jobs.get("index_generate_part") == "3" and jobs.get("index_generate") == "1"
    assert not {"catalog_part", "partition_map", "partition_reduce", "index_input", "chunk_list"} & set(jobs)


@pytest.mark.slow
def test_tables_and_report_of_an_index_only_run_say_so(tmp_path):
    """No catalog, no chunks, no partition.json: the tables and the report are built, the
    stages table has the generation, and summary.md says the run is index-only."""
    from catbench.core.infra.metrics import summarise
    from catbench.report.html import make_report
    from catbench.report.tables import make_tables
    run = tmp_path / "ix"
    jobs = run / "metrics" / "jobs"
    jobs.mkdir(parents=True)
    for k in range(2):
        (jobs / f"index_generate-0000{k}.json").write_text(json.dumps(
            {"stage": "index_generate", "start": 10.0 + k, "end": 12.0 + k, "seconds": 2.0,
             "peak_rss_mb": 150.0, "rows": 500}))
    summarise(sorted(jobs.iterdir()), run / "metrics" / "index.json", rows_stage="index_generate")
    (run / "fio" / "d").mkdir(parents=True)
    (run / "fio" / "d" / "fio.csv").write_text("target,test,MBps,iops,clat_p50_us,clat_p99_us\n"
                                               "d,seq-read,100.0,10.0,1.0,2.0\n")
    make_tables(run, require=("metrics", "fio"), report=REPORT)
    stages = (run / "tables" / "stages.csv").read_text()
    assert "index_generate" in stages and ",2,1000," in stages, stages
    md = (run / "tables" / "summary.md").read_text()
    assert "This run is index-only" in md and "None: this run is index-only" in md
    assert "index-only" in make_report(run, report=REPORT).read_text()


# ---- the preset end to end -----------------------------------------------------------------------

def cfg_id_layout(cfg: dict) -> str:
    return validate(cfg)["catalog"]["id_layout"]


@pytest.mark.slow
@pytest.mark.server
def test_preset_runs_end_to_end_at_a_tiny_scale(tmp_path):
    """config/index-study.yaml with its knob turned down: generated input (two parts), fio,
    the loads of both variants, the tables and the report; no catalog, no chunks."""
    disk = Path(tempfile.mkdtemp(prefix="cbix-", dir="/tmp"))   # short: socket paths
    try:
        cfg = _small(run="ixs", targets={"disk": {"path": str(disk)}}, index={"jobs": 2},
                     fio={"size": "4M", "runtime_s": 0.2, "numjobs": 1, "repetitions": 1},
                     # one strategy: the preset's others are the same rule (test_strategies.py runs each)
                     load={"strategies": ["sorted"], "engines": ["innodb"], "repetitions": 1, "lookup_count": 200,
                           "optimize_limit_s": 1, "sample_interval_s": 0.2, "chunk_rows": 2000})
        cfgfile = tmp_path / "c.yaml"
        cfgfile.write_text(yaml.safe_dump(cfg))
        wd = tmp_path / "wd"
        r = snakemake(wd, cfgfile, "--cores", "2")
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-5000:]
        assert "estimate: target disk" in out
        res = wd / "results" / "ixs"
        assert not (res / "catalog").exists() and not (res / "chunks").exists()
        one, valid = tmp_path / "one", validate(cfg)
        written_in_order(valid["index"]["order"], lambda num, char: generate_index(PrepareSpec.of(valid), 7, num, char),
                         one / "input", one / "input_char28", valid["index"]["sort_memory"])
        for sub in ("input", "input_char28"):
            assert _files(res / "index" / sub) == _files(one / sub)
        assert not (res / "index" / "staging").exists() or not list((res / "index" / "staging").iterdir())
        for v in ("char28", "bigint"):
            for s in ("sorted",):
                summary = json.loads((res / "load" / "disk" / v / "innodb" / s / "summary.json").read_text())
                assert summary["checksum_ok"] and summary["rows"] == EstimateSpec.of(validate(cfg)).rows
        stages = (res / "tables" / "stages.csv").read_text()
        assert "index_generate" in stages and "catalog" not in stages
        summary_md = (res / "tables" / "summary.md").read_text()
        assert "This run is index-only" in summary_md and "None: this run is index-only" in summary_md
        assert (res / "report" / "index.html").is_file()
        assert "index-only" in (res / "report" / "index.html").read_text()
        # the prediction written before the loads, and shown beside their collapse
        ws = json.loads((res / "index" / "working_set.json").read_text())
        assert set(ws["variants"]) == {"char28", "bigint"} and ws["id_layout"] == cfg_id_layout(cfg)
        collapse = (res / "tables" / "load_collapse.csv").read_text()
        assert "predicted_working_set_over_pool" in collapse.splitlines()[0]
        assert not server_procs(disk)
    finally:
        kill_servers(disk)   # only this test's servers, by pid
        shutil.rmtree(disk, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.server
def test_calibration_times_the_steady_strategies_from_a_short_load(tmp_path):
    """`catbench estimate --calibrate`: the first files loaded on a real server, the rate
    extrapolated to every row; the random-order strategy is not extrapolated."""
    disk = Path(tempfile.mkdtemp(prefix="cbix-", dir="/tmp"))
    try:
        cfg = _small(targets={"disk": {"path": str(disk)}},
                     load={"variants": ["bigint"], "strategies": ["one-file-at-a-time", "sorted"], "chunk_rows": 1000,
                           "engines": ["innodb"]})
        cfgfile = tmp_path / "c.yaml"
        cfgfile.write_text(yaml.safe_dump(cfg))
        res = tmp_path / "results"
        generate_index(PrepareSpec.of(validate(cfg)), 7, res / "index" / "input", res / "index" / "input_char28")
        r = subprocess.run([str(VENV_BIN / "catbench"), "estimate", "--config", str(cfgfile), "--results", str(res),
                            "--calibrate", "disk", "--calibrate-files", "2", "--out", str(tmp_path / "e.json")],
                           capture_output=True, text=True, env=ENV, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        times = json.loads((tmp_path / "e.json").read_text())["time"]
        assert [t["job"] for t in times] == ["load bigint/innodb/sorted"]
        t = times[0]
        assert t["calibration_files"] == 2 and 0 < t["calibration_rows"] < EstimateSpec.of(validate(cfg)).rows
        assert t["seconds"] == pytest.approx(EstimateSpec.of(validate(cfg)).rows / t["rows_per_s"])
        assert "estimate: time on disk: load bigint/innodb/sorted" in r.stdout
        assert not server_procs(disk)
    finally:
        kill_servers(disk)
        shutil.rmtree(disk, ignore_errors=True)
