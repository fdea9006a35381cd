# Stages `fio` and `load_index`: each storage target characterised with fio, and the
# secondary index loaded on a private server per target x variant x engine x strategy.
# Measuring jobs take every core, so nothing else runs beside them on a workstation.


rule target_info:
    output:
        f"{RES}/targets/{{target}}.json",
    log:
        f"{RES}/logs/targets/{{target}}.log",
    conda:
        ENV_PY
    resources:
        **job_resources("target_info"),
    params:
        cfg=cfg_json("run", "seed", "catalog", "targets", "fio"),
    shell:
        "catbench target-info --config {params.cfg:q} --target {wildcards.target:q} "
        "--out {output:q} > {log:q} 2>&1"


rule fio_run:
    input:
        rules.target_info.output,
    output:
        csv=f"{RES}/fio/{{target}}/fio.csv",
        json=directory(f"{RES}/fio/{{target}}/json"),
    log:
        f"{RES}/logs/fio/{{target}}.log",
    benchmark:
        f"{RES}/benchmarks/fio/{{target}}.tsv"
    conda:
        ENV_FIO
    threads: job_threads("fio_run")
    resources:
        **job_resources("fio_run"),
    params:
        path=lambda wildcards: target_dir(wildcards.target) / "fio",
        cfg=cfg_json("fio"),
        out=lambda wildcards, output: RUN.folder(output.csv),
    shell:
        "catbench fio --target {wildcards.target:q} --path {params.path:q} --config {params.cfg:q} "
        "--out {params.out:q} > {log:q} 2>&1"


rule fio:
    input:
        expand(rules.fio_run.output.csv, target=TARGETS),


rule load_index_run:
    input:
        index=lambda wildcards: INDEX_INPUT[wildcards.variant],
        target=rules.target_info.output,
    output:
        directory(f"{RES}/load/{{target}}/{{variant}}/{{engine}}/{{strategy}}"),
    log:
        f"{RES}/logs/load/{{target}}-{{variant}}-{{engine}}-{{strategy}}.log",
    benchmark:
        f"{RES}/benchmarks/load/{{target}}-{{variant}}-{{engine}}-{{strategy}}.tsv"
    conda:
        ENV_SERVER
    threads: job_threads("load_index_run")
    resources:
        **job_resources("load_index_run"),
    params:
        path=lambda wildcards: target_dir(wildcards.target),
        env_args=target_env,
        cfg=LOAD_CFG,
    shell:
        "{params.env_args} catbench load-index --target {wildcards.target:q} --path {params.path:q} "
        "--input-dir {input.index:q} --variant {wildcards.variant:q} --engine {wildcards.engine:q} "
        "--strategy {wildcards.strategy:q} --config {params.cfg:q} --out {output:q} > {log:q} 2>&1"


# load.engines x load.strategies: only the pairs a strategy supports run (its registry
# entry says which engines it cannot run on, and why); load_compare writes the others
# with their reason to load/not_run.json for the report.
LOAD_PAIRS, LOAD_NOT_RUN = RUN.load_pairs, RUN.load_not_run
LOADS = [
    f"{RES}/load/{t}/{v}/{e}/{s}"
    for t in TARGETS
    for v in config["load"]["variants"]
    for e, s in LOAD_PAIRS
]


rule load_compare:
    input:
        LOADS,
    output:
        csv=f"{RES}/load/comparison.csv",
        not_run=f"{RES}/load/not_run.json",
    log:
        f"{RES}/logs/load/comparison.log",
    conda:
        ENV_PY
    resources:
        **job_resources("load_compare"),
    params:
        not_run=RUN.as_json(LOAD_NOT_RUN),
    shell:
        "catbench load-compare --summaries {input:q} --not-run {params.not_run:q} "
        "--not-run-out {output.not_run:q} --out {output.csv:q} > {log:q} 2>&1"


# The stage target lists every load itself: a load whose output was removed (a failed
# or interrupted job) is redone even when comparison.csv from an earlier run exists.
rule load_index:
    input:
        LOADS,
        rules.load_compare.output,
        WORKING_SET,  # what the loads should expect (index.smk)
