# catbench: how do Qserv-style catalogs load, answer queries and restart on each disk?
# Stages are in workflow/rules/*.smk; the logic is in the catbench package (workflow/catbench).
from snakemake.utils import min_version

min_version("9.0")


# The default run when the user gives no config; a user's --configfile is layered over its
# base (config key 'base', the default run unless it says null; common.smk): its targets
# and stages, when given, are theirs alone.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "workflow/rules/common.smk"


wildcard_constraints:
    part=r"\d{5}",
    group=r"\d{5}",
    target=r"[A-Za-z][A-Za-z0-9_]*",
    variant="|".join(RUN.variants),
    strategy=r"[a-z-]+",
    engine="|".join(RUN.engines),


include: "workflow/rules/catalog.smk"
include: "workflow/rules/partition.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/storage.smk"
include: "workflow/rules/queries.smk"
include: "workflow/rules/restart.smk"
include: "workflow/rules/cluster.smk"
include: "workflow/rules/predict.smk"
include: "workflow/rules/report.smk"


# the small aggregations run where Snakemake runs (the `localrules:` directive, from the one list)
workflow.localrules(*RUN.local_rules)


rule all:
    default_target: True
    input:
        # the index study alone (index.source: generate or file) has no catalog and no chunks
        [rules.catalog.input, rules.partition.input]
        if INDEX_SOURCE == "partition"
        else [],
        [rules.index_generate.output] if INDEX_SOURCE == "generate" else [],
        [rules.index_read.output] if INDEX_SOURCE == "file" else [],
        [rules.fio.input] if "fio" in STAGES else [],
        [rules.load_index.input] if "load_index" in STAGES else [],
        [rules.queries.input] if "queries" in STAGES else [],
        [rules.restart.input] if "restart" in STAGES else [],
        [rules.cluster.input] if "cluster" in STAGES else [],
        [rules.predict.input] if "predict" in STAGES else [],
        rules.report.input,


onerror:
    RUN.print_failed_jobs(log)
