# Stage `cluster`: a private Galera cluster per target (every node's datadir on it), loaded
# with the index through one node; one node restarted under load per kind (IST, SST, crash),
# phase by phase, with every acknowledged insert accounted for on every node.


rule cluster_restart_run:
    input:
        index=lambda wildcards: INDEX_INPUT[config["cluster"]["variant"]],
        target=rules.target_info.output,
    output:
        # summary.json is written last: a directory without it is an unfinished run, and
        # the <kind>.error.json / node<i>-error.log evidence of a failure is kept.
        f"{RES}/cluster/{{target}}/summary.json",
    log:
        f"{RES}/logs/cluster/{{target}}.log",
    benchmark:
        f"{RES}/benchmarks/cluster/{{target}}.tsv"
    conda:
        ENV_SERVER
    threads: job_threads("cluster_restart_run")
    resources:
        **job_resources("cluster_restart_run"),
    params:
        env_args=target_env,
        path=lambda wildcards: target_dir(wildcards.target),
        cfg=cfg_json("cluster", "server", "seed"),
        out=lambda wildcards, output: RUN.folder(output[0]),
    shell:
        "{params.env_args} catbench cluster --target {wildcards.target:q} --path {params.path:q} "
        "--input-dir {input.index:q} --config {params.cfg:q} --out {params.out:q} > {log:q} 2>&1"


rule cluster:
    input:
        expand(rules.cluster_restart_run.output, target=CLUSTER_TARGETS),
