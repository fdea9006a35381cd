"""Job requests from the config (never from the host), the Slurm partition check's
parsing and messages, and the isolation record of measuring jobs. Fast: no Slurm needed
(tests/test_slurm.py and tests/test_slurm_site.py run the same checks against a real Slurm)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from catbench.core.infra.config import n_groups, validate
from catbench.core.infra.jobs import isolation
from catbench.core.infra.jobs.requests import (
    MEASURING,
    expected_seconds,
    measure_domain,
    measure_domains,
    requests,
)
from catbench.core.infra.jobs.sizing import RunSizes
from catbench.core.infra.jobs.slurm import check_jobs, minutes, nodelist, parse_slurm_partitions
from catbench.core.sky.copies import map_batches
from support.text import line_with

REPO = Path(__file__).resolve().parent.parent
SCONTROL = (
    "PartitionName=batch AllowGroups=ALL Default=YES DefaultTime=NONE MaxNodes=UNLIMITED "
    "MaxTime=00:30:00 MinNodes=0 MaxCPUsPerNode=UNLIMITED Nodes=n[1-2] State=UP TotalCPUs=10 "
    "MaxMemPerNode=UNLIMITED\n"
    "PartitionName=long Default=NO MaxTime=2-00:00:00 MaxCPUsPerNode=4 Nodes=n2 State=UP "
    "MaxMemPerNode=8000\n")
SINFO = "n1|batch|2|4000|idle\nn2|batch|8|16000|mixed\nn2|long|8|16000|mixed\n"


def _cfg(**over):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    cfg.update(over)
    return validate(cfg)


def test_requests_come_from_the_config_not_the_host(monkeypatch):
    cfg = _cfg()
    before = {k: v.as_dict() for k, v in requests(RunSizes.of(cfg)).items()}
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert {k: v.as_dict() for k, v in requests(RunSizes.of(cfg)).items()} == before
    for rule in MEASURING:
        assert before[rule]["threads"] == cfg["jobs"]["cpus"] == 2
    assert requests(RunSizes.of(_cfg(jobs={"cpus": 6})))["load_index_run"].threads == 6
    assert requests(RunSizes.of(_cfg()))["catalog_part"].threads == 1


def test_an_lsdb_job_whose_workers_are_slurm_jobs_is_only_their_client():
    # a SLURMCluster's worker jobs need the node's CPUs: their client must not hold it (exclusive),
    # but it holds the node's measure domain, so no measuring job of the run queues ahead of them
    own = requests(RunSizes.of(_cfg()))["queries_lsdb"]
    cfg = _cfg()
    cfg["queries"]["lsdb"]["cluster"] = "slurm"
    client = requests(RunSizes.of(cfg))["queries_lsdb"]
    assert own.measuring and own.whole_node and own.threads == 2
    assert client.measuring and not client.whole_node and client.threads == 1
    assert (own.beside, client.beside) == (0, cfg["jobs"]["cpus"])


def test_time_limits_scale_with_the_config():
    small, big = _cfg(), _cfg(catalog={**_cfg()["catalog"], "sky": {"ra_min_deg": 0, "ra_max_deg": 360,
                                                                    "dec_min_deg": -30, "dec_max_deg": 30}})
    rs, rb = requests(RunSizes.of(small)), requests(RunSizes.of(big))
    assert rb["load_index_run"].runtime > 5 * rs["load_index_run"].runtime
    assert rs["load_index_run"].keys["runtime"] == "jobs.index_rows_per_s"
    slow = requests(RunSizes.of(_cfg(jobs={"index_rows_per_s": 200})))
    assert slow["load_index_run"].runtime > rs["load_index_run"].runtime
    # the default run fits a site's 30-minute partition (the rules of query engines it does not run left out)
    skipped = {f"queries_{e}" for e in ("mysql", "duckdb", "lsdb")} - {f"queries_{e}" for e in small["queries"]["engines"]}
    assert skipped == {"queries_lsdb"}
    assert max(r.runtime for k, r in rs.items() if k not in skipped) <= 30, {k: r.runtime for k, r in rs.items()}



def test_a_crowded_skys_parts_are_sized_by_the_objects_they_keep():
    """A galactic sky thins most copies, so a part holds many copies: its rows (and the
    map's) are the objects it keeps, within catalog.max_objects_per_part, not its copies
    times the patch (which made the bench's plan say 14 min for a 25 s catalog)."""
    cfg = validate(yaml.safe_load((REPO / "config" / "bench.yaml").read_text()))
    cat = cfg["catalog"]
    s = RunSizes.of(cfg).scale
    assert s.part_rows <= cat["max_objects_per_part"] * (1 + cat["sources_per_object"])
    assert s.map_rows <= cfg["partition"]["max_rows_per_map"] + s.part_rows
    assert expected_seconds(RunSizes.of(cfg))["catalog_part"] < 30
    # a Galera run at the bench's scale took 232 s a target: expected within 2x of that
    assert 232 / 2 < expected_seconds(RunSizes.of(cfg))["cluster_restart_run"] < 2 * 232

def test_measure_domains_per_node_or_host():
    sizes = RunSizes.of(_cfg(targets={"a": {"path": "/tmp/cb-a", "node": "n1"}, "b": {"path": "/tmp/cb-b", "node": "n1"},
                                      "c": {"path": "/tmp/cb-c", "node": "n-2.x"}, "d": {"path": "/tmp/cb-d"}}))
    assert measure_domain(sizes, "a") == measure_domain(sizes, "b") == "measure_node_n1"
    assert measure_domain(sizes, "c") == "measure_node_n_2_x"
    assert measure_domain(sizes, "d") == measure_domain(sizes, None) == "measure_host"
    assert measure_domains(sizes) == ["measure_host", "measure_node_n1", "measure_node_n_2_x"]


def test_slurm_times_and_nodelist():
    assert [minutes(t) for t in ("30", "30:00", "00:30:00", "1-00:00:00", "2-3", "00:30:01")] == \
        [30, 30, 30, 1440, 3060, 31]
    assert minutes("UNLIMITED") is None and minutes("INFINITE") is None
    assert nodelist("--exclusive --nodelist=ccq150") == "ccq150"
    assert nodelist("--exclusive") is None


def _job(**kw):
    job = {"rule": "load_index_run", "slurm_partition": None, "threads": 2, "mem_mb": 2000, "runtime": 20,
           "node": None, "keys": {"threads": "jobs.cpus", "runtime": "jobs.index_rows_per_s",
                                  "mem_mb": "server.settings.innodb_buffer_pool_size",
                                  "node": "targets.disk.node"}, "overridden": {}}
    job.update(kw)
    return job


def test_partition_check_names_rule_request_limit_and_key():
    parts = parse_slurm_partitions(SCONTROL, SINFO)
    assert parts["batch"].default and parts["batch"].max_time == 30 and set(parts["batch"].nodes) == {"n1", "n2"}
    assert parts["long"].max_cpus_per_node == 4 and parts["long"].max_mem_per_node == 8000
    assert check_jobs([_job()], parts) == ([], [])
    problems, _ = check_jobs([_job(runtime=45), _job(runtime=45), _job(rule="fio_run", threads=9)], parts)
    assert len(problems) == 2, problems  # one message per rule and problem
    # the rule, what it asks, the partition and its limit, and the key to change
    assert line_with(problems[0], "rule load_index_run", "45 min", "partition 'batch'", "30 min (MaxTime)",
                     "'jobs.index_rows_per_s'")
    assert line_with(problems[1], "rule fio_run", "9 CPUs per task", "partition 'batch'", "8 CPUs per node",
                     "'jobs.cpus'")
    problems, _ = check_jobs([_job(node="n1", threads=4, mem_mb=5000)], parts)
    assert line_with(problems[0], "node n1", "partition 'batch'", "2 CPUs")
    assert "asks 5000 MB of memory" in problems[1] and "server.settings.innodb_buffer_pool_size" in problems[1]
    problems, _ = check_jobs([_job(slurm_partition="long", threads=6, runtime=3000, mem_mb=9000)], parts)
    assert len(problems) == 3 and "at most 4 CPUs" in problems[1] and "at most 8000 MB" in problems[2]
    problems, _ = check_jobs([_job(node="n9")], parts)
    assert line_with(problems[0], "node n9", "'targets.disk.node'", "not in partition 'batch'")
    problems, _ = check_jobs([_job(slurm_partition="gpu")], parts)
    assert "partition 'gpu' (resource slurm_partition) does not exist" in problems[0]
    problems, _ = check_jobs([_job(runtime=45, overridden={"runtime": True})], parts)
    assert "the workflow profile's set-threads/set-resources" in problems[0]
    # a SLURMCluster's client on a 2-CPU node: its worker jobs' CPUs must fit there beside its own
    assert check_jobs([_job(rule="queries_lsdb", node="n1", threads=1, beside=1)], parts) == ([], [])
    problems, _ = check_jobs([_job(rule="queries_lsdb", node="n1", threads=1, beside=2)], parts)
    assert line_with(problems[0], "rule queries_lsdb", "Dask worker jobs", "2 CPUs on its node beside its own 1",
                     "node n1", "'jobs.cpus' to at most 1", "local")


def test_partition_check_warns_when_every_node_is_down():
    parts = parse_slurm_partitions(SCONTROL, "n1|batch|2|4000|drained\nn2|batch|8|16000|down*\n")
    problems, warnings = check_jobs([_job()], parts)
    assert problems == [] and "every node it may use is unavailable" in warnings[0]


def test_isolation_record_names_a_second_measuring_job(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation, "NODE_LOCK", tmp_path / "node.lock")
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    with isolation.measuring("disk", tmp_path / "disk") as first:
        # a second measuring job on the same node and target, in another process
        code = ("import json\n"
                "from catbench.core.infra.jobs import isolation\n"
                "from pathlib import Path\n"
                "isolation.NODE_LOCK = Path(%r)\n"
                "with isolation.measuring('disk', %r) as rec: pass\n"
                "print(json.dumps(rec))") % (str(tmp_path / "node.lock"), str(tmp_path / "disk"))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    second = yaml.safe_load(out)
    assert second["alone"] is False and len(second["shared_locks"]) == 2
    assert f'"pid": {os.getpid()}' in second["shared_locks"][0]
    assert first["shared_locks"] == [] and first["slurm_exclusive"] is None
    path = isolation.write_record(first, tmp_path / "out")
    assert path.name == "isolation.json" and "alone" in path.read_text()


def test_other_catbench_commands_are_seen(monkeypatch):
    assert isolation.is_catbench(["/x/.venv/bin/python3", "/x/.venv/bin/catbench", "load-index"])
    assert isolation.is_catbench(["python", "-m", "catbench", "fio"])
    assert not isolation.is_catbench(["/bin/bash", "-c", "catbench fio > log"])
    assert not isolation.is_catbench(["snakemake", "--cores", "2"])


@pytest.mark.parametrize("rule", sorted(MEASURING))
def test_measuring_rules_take_the_configured_cpus(rule):
    # every measuring rule is in the requests table with the config's CPUs
    assert requests(RunSizes.of(_cfg(jobs={"cpus": 3})))[rule].threads == 3


def test_partition_jobs_use_the_cpus_side_by_side():
    """One map job (a small catalog) maps jobs.cpus parts at once, more map jobs run side
    by side on one thread each; there are at least jobs.cpus one-thread reduces."""
    small = _cfg(jobs={"cpus": 4})
    maps = len(map_batches(small))
    assert requests(RunSizes.of(small))["partition_map"].threads == max(1, 4 // maps)
    one = _cfg(jobs={"cpus": 4}, partition={**small["partition"], "max_rows_per_map": 10**9})
    assert len(map_batches(one)) == 1 and requests(RunSizes.of(one))["partition_map"].threads == 4
    # several catalog parts (the default run's 148k objects are one), each its own map job
    two = _cfg(jobs={"cpus": 4}, catalog={**small["catalog"], "max_objects_per_part": 50_000},
               partition={**small["partition"], "max_rows_per_map": 1})
    assert len(map_batches(two)) > 1 and requests(RunSizes.of(two))["partition_map"].threads == max(1, 4 // len(map_batches(two)))
    big = _cfg(jobs={"cpus": 4}, partition={**small["partition"], "max_rows_per_group": 10**9})
    assert n_groups(big) == 4 and requests(RunSizes.of(big))["partition_reduce"].threads == 1
    assert n_groups(_cfg(jobs={"cpus": 1}, partition={**small["partition"], "max_rows_per_group": 1000})) > 4
