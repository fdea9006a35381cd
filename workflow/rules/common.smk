# Shared by all the .smk files: config validation (before any job runs), the results
# folder and the DAG's sizes derived from the config.
import json
import os
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

sys.path.insert(0, str(Path(workflow.basedir) / "workflow"))  # package importable uninstalled
from catbench.core import layout as cb_layout  # noqa: E402
from catbench.core import metrics as cb_metrics  # noqa: E402
from catbench.core import config as cb_config  # noqa: E402
from catbench.core import targets as cb_targets  # noqa: E402
from catbench.core.targets import TargetError  # noqa: E402

try:
    _validated = cb_config.validate(config)
except cb_config.ConfigError as e:
    raise WorkflowError(str(e))
config.clear()
config.update(_validated)

# Targets without a SLURM node are checked now, before any job runs (exists or can be
# created: a writable directory or nearest existing parent). Free space is checked by each target's first job
# (target_info, on its node), so a full target fails its own jobs and, with
# --keep-going, the other targets still finish.
try:
    cb_targets.check_targets(
        config, [t for t, v in config["targets"].items() if not v.get("node")], space=False,
        create=False,  # jobs create their directories: a dry run creates nothing outside results/
    )
except TargetError as e:
    raise WorkflowError(str(e))

RES = f"results/{config['run']}"
ENV_PY = "../../envs/python.yaml"
ENV_FIO = "../../envs/fio.yaml"
ENV_SERVER = "../../envs/server.yaml"
TARGETS = list(config["targets"])
# Measuring jobs ask for the whole machine (capped at --cores), so on a workstation
# nothing else runs beside them; a cluster profile sets their threads instead.
MEASURE_THREADS = os.cpu_count() or 1
# Optional measuring stages of this run: what `all` builds and the final tables require.
STAGES = config["stages"]
_STAGE_RESULTS = {"fio": "fio", "load_index": "load", "queries": "queries", "restart": "restart"}
TABLE_REQUIRE = " ".join(["chunks", "metrics"] + [_STAGE_RESULTS[s] for s in STAGES])
# Index input per schema variant: the seed's CHAR(28) keys, or numeric objectIds.
INDEX_INPUT = {"seed": f"{RES}/index/input_seed", "qserv": f"{RES}/index/input"}
PARTS = [f"{p:05d}" for p in range(len(cb_layout.part_copies(config["catalog"])))]
GROUPS = [f"{g:05d}" for g in range(cb_config.n_groups(config))]
# Memory per job scales with a part or group, never with the whole catalog.
_ROW_BYTES = 8 * (16 + config["catalog"]["filler_columns"])
PART_MEM_MB = 500 + 6 * _ROW_BYTES * config["catalog"]["max_objects_per_part"] * (
    1 + config["catalog"]["sources_per_object"]) // 2**20
GROUP_MEM_MB = 500 + 4 * _ROW_BYTES * config["partition"]["max_rows_per_group"] // 2**20
# Loader client memory (keys for lookups, sort buffers) plus the server's buffer pool.
LOAD_MEM_MB = 1500 + cb_targets.settings_mb(config["server"]["settings"])
# Restart job: its client plus the server (restart.settings over server.settings).
from catbench.restart.options import restart_job_mb  # noqa: E402
RESTART_MEM_MB = restart_job_mb(config)
# A load job reads the load and server sections (`catbench load-index --config`), except
# which variants and strategies run: those shape the DAG, so adding a strategy does not
# re-run the loads already done (Snakemake's params rerun trigger).
LOAD_CFG = json.dumps(
    {"load": {k: v for k, v in config["load"].items() if k not in ("variants", "strategies")},
     "server": config["server"]},
    sort_keys=True,
)

def cfg_json(*sections):
    """The config sections a job depends on, as JSON: a change re-runs only the rules
    that read the changed section (Snakemake's params rerun trigger)."""
    return json.dumps({k: config[k] for k in sections}, sort_keys=True)


def print_failed_jobs(snakemake_log):
    """onerror: each failed job's own first error line and its log, on the console."""
    try:
        text = Path(snakemake_log).read_text(errors="replace")
    except (OSError, TypeError):
        return
    for line in cb_metrics.failed_jobs(text):
        print(f"catbench: {line}", file=sys.stderr)


def target_slurm_extra(wildcards):
    """Keep every job of a target on the node that owns its disk (targets.<t>.node)."""
    node = config["targets"][wildcards.target].get("node")
    return f"--nodelist={shlex.quote(node)}" if node else ""


def target_env(wildcards):
    """Shell prefix for a target's jobs: its server tmpdir when targets.<t>.tmpdir is set."""
    tmp = config["targets"][wildcards.target].get("tmpdir")
    return f"CATBENCH_TMPDIR={shlex.quote(tmp)}" if tmp else ""
