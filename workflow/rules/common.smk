# Shared by the .smk files: the one call before any job (workflow/catbench/cli/workflow/dag.py: every
# check, then each value the rules read of the run; a refusal is Snakemake's own error), and the
# names the rules read it by.
from catbench.cli.workflow.dag import Dag

RUN = Dag.of(workflow, config)
RES = RUN.res
OWN_FILES, OWN_FINGERPRINT, OWN_SOURCES = (
    RUN.files.own_files,
    RUN.files.own_fingerprint,
    RUN.files.own_sources,
)
PATCH_FILES, PATCH_FINGERPRINT, PATCH_RECORD = (
    RUN.files.patch_files,
    RUN.files.patch_fingerprint,
    RUN.files.patch_record,
)
ENV_PY = "../../envs/python.yaml"
ENV_FIO = "../../envs/fio.yaml"
ENV_SERVER = "../../envs/server.yaml"
TARGETS = RUN.targets
# Optional measuring stages of this run: what `all` builds and the final tables require.
STAGES = RUN.stages
# Where the index input comes from: the partition stage, or straight from the generator
# (index.source: generate, index.smk: no catalog, chunks or queries in that run).
INDEX_SOURCE = config["index"]["source"]
TABLE_REQUIRE = RUN.table_require
# Targets that get a Galera cluster and the query suite (cluster.targets, queries.targets, or all).
CLUSTER_TARGETS = RUN.stage_targets("cluster")
QUERY_TARGETS = RUN.stage_targets("queries")
# The query engines that run the suite (queries.engines).
QUERY_ENGINES = config["queries"]["engines"]
# Index input per schema variant: CHAR(28) keys, or numeric objectIds.
INDEX_INPUT = RUN.index_input
WORKING_SET = f"{RES}/index/working_set.json"
INDEX_ORDER = RUN.index_order
PARTS = RUN.parts
GROUPS = RUN.groups
# A load job's config, less what shapes the DAG (Snakemake's params rerun trigger).
LOAD_CFG = RUN.load_cfg
# What each job asks for (threads, memory, time limit), from the config alone: the one place is
# workflow/catbench/core/infra/jobs/requests.py (a site may still override in its profile with
# set-threads / set-resources).
cfg_json = RUN.cfg_json
job_threads = RUN.job_threads
job_resources = RUN.job_resources
target_env = RUN.target_env
target_dir = RUN.target_dir
dask_cpus = RUN.dask_cpus


onstart:
    RUN.check_slurm()  # under the slurm executor, every job's request against its partition
