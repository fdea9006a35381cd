# Shared by all the .smk files: the checks before any job (one package call), the results
# folder and the DAG's sizes derived from the config.
import json
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # package importable uninstalled
from catbench.core.sky import copies as cb_copies  # noqa: E402
from catbench.core.infra import metrics as cb_metrics  # noqa: E402
from catbench.core.infra import config as cb_config  # noqa: E402
from catbench.core.index import table as cb_index_table  # noqa: E402
from catbench.core.infra.jobs import plan as cb_plan  # noqa: E402
from catbench.core.infra.jobs import requests as cb_requests  # noqa: E402
from catbench.core.infra.jobs.sizing import RunSizes  # noqa: E402
from catbench.core.infra.jobs import slurm as cb_slurm  # noqa: E402
from catbench.load.spec import LoadSpec  # noqa: E402
from catbench.cli import ladder as cb_ladder  # noqa: E402
from catbench.core.server.loaddata import LoadError  # noqa: E402
from catbench.prepare import spec as cb_prepare_spec  # noqa: E402
from catbench.prepare.own import manifest as cb_patch_manifest  # noqa: E402

# Every check before any job (cli/ladder.py preflight): the config validated in place, the
# targets, the run's folders, the user's files, the space estimate, the system tools.
try:
    PREFLIGHT = cb_ladder.preflight(workflow, config, sys.argv)
except cb_ladder.PreflightError as e:
    raise WorkflowError(str(e))
RES = f"results/{config['run']}"
OWN_FILES, OWN_FINGERPRINT, OWN_SOURCES = PREFLIGHT.own_files, PREFLIGHT.own_fingerprint, PREFLIGHT.own_sources
PATCH_FILES, PATCH_FINGERPRINT, PATCH_RECORD = (PREFLIGHT.patch_files, PREFLIGHT.patch_fingerprint,
                                                PREFLIGHT.patch_record)
ENV_PY = "../../envs/python.yaml"
ENV_FIO = "../../envs/fio.yaml"
ENV_SERVER = "../../envs/server.yaml"
TARGETS = list(config["targets"])
# What each job asks for (threads, memory, time limit), from the config alone: the one
# place is workflow/catbench/core/infra/jobs/requests.py (rules call job_threads/job_resources;
# a site may still override in its profile with set-threads / set-resources).
JOB_SIZES = RunSizes.of(config)   # the config as the job-sizing model reads it (core/infra/jobs/sizing.py)
JOB_REQUESTS = cb_requests.requests(JOB_SIZES)
for _domain in cb_requests.measure_domains(JOB_SIZES):
    workflow.register_resource(_domain, 1)  # one measuring job at a time per node (or host)
# Optional measuring stages of this run: what `all` builds and the final tables require.
STAGES = config["stages"]
_STAGE_RESULTS = {"fio": "fio", "load_index": "load", "queries": "queries", "restart": "restart", "cluster": "cluster"}
# Where the index input comes from: the partition stage, or straight from the generator
# (index.source: generate, index.smk: no catalog, chunks or queries in that run).
INDEX_SOURCE = config["index"]["source"]
if INDEX_SOURCE != "partition" and "queries" in STAGES:
    raise WorkflowError(f"config key 'index.source': {INDEX_SOURCE} writes no chunk files, which the queries "
                        "stage needs; remove queries from 'stages' or set index.source: partition")
TABLE_REQUIRE = ((["chunks", "metrics"] if INDEX_SOURCE == "partition" else ["metrics"])
                 + [_STAGE_RESULTS[s] for s in STAGES if s in _STAGE_RESULTS])
# Targets that get a Galera cluster and the query suite (cluster.targets, queries.targets, or all).
CLUSTER_TARGETS = cb_config.stage_targets(config, "cluster")
QUERY_TARGETS = cb_config.stage_targets(config, "queries")
# Index input per schema variant: CHAR(28) keys, or numeric objectIds (the same folders,
# and bytes, whichever INDEX_SOURCE writes them).
INDEX_INPUT = {v.name: f"{RES}/index/{v.folder}" for v in cb_index_table.VARIANTS.values()}
WORKING_SET = f"{RES}/index/working_set.json"
# The order of the index input's rows (index.order, prepare/index_order.py), for whichever rule writes it.
INDEX_ORDER = (f"--order {shlex.quote(config['index']['order'])} "
               f"--sort-memory {shlex.quote(str(config['index']['sort_memory']))}")
PARTS = [f"{p:05d}" for p in range(len(cb_copies.part_copies(config["catalog"])))]
GROUPS = [f"{g:05d}" for g in range(cb_config.n_groups(config))]
# A load job reads the load and server sections (`catbench load-index --config`), except
# which variants, engines and strategies run: those shape the DAG, so adding a strategy
# does not re-run the loads already done (Snakemake's params rerun trigger).
LOAD_CFG = json.dumps(
    {"load": {k: v for k, v in config["load"].items() if k not in ("variants", "strategies", "engines")},
     "server": config["server"]},
    sort_keys=True,
)

def cfg_json(*sections):
    """The config sections a job depends on, as JSON: a change re-runs only the rules
    that read the changed section (Snakemake's params rerun trigger)."""
    return json.dumps({k: config[k] for k in sections}, sort_keys=True)


def print_failed_jobs(snakemake_logs):
    """onerror: each failed job's own first error line and its log, on the console.
    Snakemake passes its log as a list of paths (one path in older versions)."""
    paths = [snakemake_logs] if isinstance(snakemake_logs, (str, Path)) else snakemake_logs or []
    for path in paths:
        try:
            text = Path(path).read_text(errors="replace")
        except OSError:
            continue
        for line in cb_metrics.failed_jobs(text):
            print(f"catbench: {line}", file=sys.stderr)


def target_slurm_extra(wildcards):
    """Keep every job of a target on the node that owns its disk (targets.<t>.node)."""
    node = config["targets"][wildcards.target].get("node")
    return f"--nodelist={shlex.quote(node)}" if node else ""


def _request(name):
    if name not in JOB_REQUESTS:
        raise WorkflowError(f"rule {name} has no request in workflow/catbench/core/infra/jobs/requests.py")
    return JOB_REQUESTS[name]


def job_threads(rule):
    """threads: of a rule, from JOB_REQUESTS (jobs.cpus for a measuring rule). On a local
    run a measuring job takes every core given with --cores, so nothing runs beside it."""
    req = _request(rule)

    def threads(wildcards):
        return max(req.threads, workflow.cores or 1) if req.measuring and workflow.local_exec else req.threads
    return threads


def job_resources(rule):
    """resources: of a rule, from JOB_REQUESTS: mem_mb, runtime (min), the target's node
    under Slurm (--nodelist) and, for a measuring rule, its node's measure resource
    (one at a time) and the whole Slurm node (--exclusive, jobs.exclusive)."""
    req = _request(rule)
    res = {"mem_mb": req.mem_mb, "runtime": req.runtime}

    def slurm_extra(wildcards):
        pin = target_slurm_extra(wildcards) if wildcards.get("target") else ""
        return " ".join(x for x in ("--exclusive" if req.measuring and config["jobs"]["exclusive"] else "", pin) if x)
    res["slurm_extra"] = slurm_extra
    if req.measuring:
        for domain in cb_requests.measure_domains(JOB_SIZES):
            res[domain] = lambda wildcards, d=domain: int(
                cb_requests.measure_domain(JOB_SIZES, wildcards.get("target")) == d)
    elif req.local:     # every domain: no measuring job runs beside it
        res.update({domain: 1 for domain in cb_requests.measure_domains(JOB_SIZES)})
    return res


def check_slurm_requests():
    """onstart, after the DAG is built and before the first sbatch, under the slurm
    executor only: every job's request must fit its partition (MaxTime, CPUs and memory
    of its nodes, a pinned node inside it), else stop naming the rule, the request, the
    limit and the config key to edit. SIGTERM then cancels the submitted jobs, like Ctrl-C."""
    plugin = workflow.executor_plugin
    if plugin is None or plugin.name != "slurm":
        return
    cb_slurm.cancel_on_signal(getattr(getattr(workflow.scheduler, "_executor", None), "run_uuid", None))
    jobs = []
    for job in workflow.dag.needrun_jobs():
        if job.is_local:    # localrules run where Snakemake runs
            continue
        req, res = JOB_REQUESTS.get(job.rule.name), job.resources
        asked = {"threads": job.threads, "mem_mb": res.get("mem_mb"), "runtime": res.get("runtime") or 0}
        target = job.wildcards_dict.get("target")
        jobs.append({"rule": job.rule.name, "slurm_partition": res.get("slurm_partition"), **asked,
                     "node": cb_slurm.nodelist(res.get("slurm_extra")),
                     "keys": {**(req.keys if req else {}), "node": f"targets.{target}.node"},
                     "overridden": {k: req is not None and v != getattr(req, k) for k, v in asked.items()}})
    try:
        problems, warnings = cb_slurm.check_jobs(jobs, cb_slurm.read_slurm_partitions())
    except cb_slurm.SlurmError as e:
        raise WorkflowError(str(e))
    for w in warnings:
        print(f"catbench: warning: {w}", file=sys.stderr)
    if problems:
        raise WorkflowError(f"catbench: {len(problems)} job request(s) do not fit the Slurm partitions; "
                            "nothing was submitted:\n  " + "\n  ".join(problems))


def cli_targets():
    """The targets on Snakemake's command line (none: `all`), read with its own parser; None
    when this process is not the snakemake command (the whole run is then checked)."""
    if not Path(sys.argv[0]).name.startswith("snakemake") and not sys.argv[0].endswith("snakemake/__main__.py"):
        return None
    try:
        from snakemake.cli import get_argument_parser

        return sorted(get_argument_parser().parse_known_args(sys.argv[1:])[0].targets or [])
    except (Exception, SystemExit):
        return None


def check_plan(load_pairs):
    """Before any job, in the main process (core/infra/jobs/plan.py): the run's rows and expected minutes
    per stage, printed; a run expected to take longer than run_limit_h stops here, naming it.
    ``load_pairs``: the (engine, strategy) loads that run per target and variant."""
    if not workflow.is_main_process:
        return
    per = len(TARGETS) * len(config["load"]["variants"]) if "load_index" in STAGES else 0
    loads = [(e, cb_strategies.get_strategy(s).resumable) for e, s in load_pairs] * per
    try:
        # the load's stop, read by its spec (core reads no stage's key), whose check of the
        # load's options (sort_memory ...) then fails here, before any job
        spec = LoadSpec.of(config) if loads else None
    except LoadError as e:
        raise WorkflowError(f"catbench: nothing was started: config key 'load': {e}")
    plan = cb_plan.plan(JOB_SIZES, loads, time_limit_s=spec and spec.time_limit_s)
    for line in cb_plan.lines(plan):
        print(f"catbench: {line}", file=sys.stderr)
    try:
        cb_plan.check_limit(plan, cli_targets())
    except cb_config.ConfigError as e:
        raise WorkflowError(f"catbench: nothing was started: {e}")


def target_env(wildcards):
    """Shell prefix for a target's jobs: its server tmpdir when targets.<t>.tmpdir is set."""
    tmp = config["targets"][wildcards.target].get("tmpdir")
    return f"CATBENCH_TMPDIR={shlex.quote(tmp)}" if tmp else ""


onstart:
    check_slurm_requests()
