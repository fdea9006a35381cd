# Stage `restart`: clean and crash restarts of each target's server, phase by phase
# from the server's error log, with every committed row accounted for.


rule restart_run:
    input:
        index=lambda wildcards: INDEX_INPUT[config["restart"]["variant"]],
        target=rules.target_info.output,
    output:
        # summary.json is written last: a directory without it is an unfinished run, and
        # the <kind>.error.json / server-error.log evidence of a failure is kept.
        f"{RES}/restart/{{target}}/summary.json",
    log:
        f"{RES}/logs/restart/{{target}}.log",
    benchmark:
        f"{RES}/benchmarks/restart/{{target}}.tsv"
    conda:
        ENV_SERVER
    threads: job_threads("restart_run")
    resources:
        **job_resources("restart_run"),
    params:
        env_args=target_env,
        path=lambda wildcards: target_dir(wildcards.target),
        cfg=cfg_json("restart", "server", "seed"),
        out=lambda wildcards, output: RUN.folder(output[0]),
    shell:
        "{params.env_args} catbench restart --target {wildcards.target:q} --path {params.path:q} "
        "--input-dir {input.index:q} --config {params.cfg:q} --out {params.out:q} > {log:q} 2>&1"


rule restart:
    input:
        expand(rules.restart_run.output, target=TARGETS),
