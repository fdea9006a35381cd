# Stage `restart`: clean and crash restarts of each target's server, phase by phase
# from the server's error log, with every committed row accounted for.


rule restart_run:
    input:
        index=lambda wildcards: INDEX_INPUT[config["restart"]["variant"]],
        target=rules.target_info.output,
    output:
        directory(f"{RES}/restart/{{target}}"),
    params:
        env=target_env,
        path=lambda wildcards: cb_config.target_dir(config, wildcards.target),
        settings=json.dumps({**config["server"]["settings"], **config["restart"]["settings"]}),
        options=RESTART_OPTIONS,
    threads: MEASURE_THREADS
    log:
        f"{RES}/logs/restart/{{target}}.log",
    benchmark:
        f"{RES}/benchmarks/restart/{{target}}.tsv"
    conda:
        ENV_SERVER
    resources:
        mem_mb=LOAD_MEM_MB,
        runtime=120,
        slurm_extra=target_slurm_extra,
    shell:
        "{params.env} catbench restart --target {wildcards.target} --path {params.path:q} "
        "--input-dir {input.index} --settings-json {params.settings:q} {params.options} "
        "--out {output} > {log} 2>&1"


rule restart:
    input:
        expand(rules.restart_run.output, target=TARGETS),
