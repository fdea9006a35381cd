# Stage `queries`: chunk tables and the secondary index loaded into each target's
# private server, the LV/HV/SHV suite run the Qserv way (one query per chunk, merged),
# the same suite in DuckDB over the Parquet chunks and with LSDB over HATS catalogs built on each
# target (queries.engines), and every answer cross-checked.


rule queries_mysql:
    input:
        chunks=rules.chunk_list.output.chunks,
        index=rules.index_input.output.numeric,
        index_char28=rules.index_input.output.char28,
        target=rules.target_info.output,
    output:
        directory(f"{RES}/queries/{{target}}/mysql"),
    log:
        f"{RES}/logs/queries/{{target}}-mysql.log",
    benchmark:
        f"{RES}/benchmarks/queries/{{target}}-mysql.tsv"
    conda:
        ENV_SERVER
    threads: job_threads("queries_mysql")
    resources:
        **job_resources("queries_mysql"),
    params:
        cfg=cfg_json("run", "seed", "partition", "server", "queries"),
        path=lambda wildcards: target_dir(wildcards.target),
        env_args=target_env,
        results=lambda wildcards, input: RUN.folder(input.chunks, 2),
    shell:
        "{params.env_args} catbench queries --query-engine mysql --target {wildcards.target:q} --path {params.path:q} "
        "--results {params.results:q} --config {params.cfg:q} --time-limit-min {resources.runtime:q} "
        "--out {output:q} > {log:q} 2>&1"


rule queries_duckdb:
    input:
        chunks=rules.chunk_list.output.chunks,
    output:
        directory(f"{RES}/queries/parquet/duckdb"),
    log:
        f"{RES}/logs/queries/duckdb.log",
    benchmark:
        f"{RES}/benchmarks/queries/duckdb.tsv"
    conda:
        ENV_PY
    threads: job_threads("queries_duckdb")
    resources:
        **job_resources("queries_duckdb"),
    params:
        cfg=cfg_json("run", "seed", "partition", "server", "queries"),
        results=lambda wildcards, input: RUN.folder(input.chunks, 2),
    shell:
        "catbench queries --query-engine duckdb --results {params.results:q} "
        "--config {params.cfg:q} --time-limit-min {resources.runtime:q} --out {output:q} > {log:q} 2>&1"


rule queries_lsdb:
    input:
        chunks=rules.chunk_list.output.chunks,
        target=rules.target_info.output,
    output:
        directory(f"{RES}/queries/{{target}}/lsdb"),
    log:
        f"{RES}/logs/queries/{{target}}-lsdb.log",
    benchmark:
        f"{RES}/benchmarks/queries/{{target}}-lsdb.tsv"
    conda:
        ENV_PY
    threads: job_threads("queries_lsdb")
    resources:
        **job_resources("queries_lsdb"),
    params:
        cfg=cfg_json("run", "seed", "partition", "server", "queries"),
        path=lambda wildcards: target_dir(wildcards.target),
        env_args=target_env,
        results=lambda wildcards, input: RUN.folder(input.chunks, 2),
        dask_cpus=dask_cpus,
    shell:
        "{params.env_args} catbench queries --query-engine lsdb --target {wildcards.target:q} --path {params.path:q} "
        "--results {params.results:q} --config {params.cfg:q} --time-limit-min {resources.runtime:q} "
        "--threads {params.dask_cpus:q} --mem-mb {resources.mem_mb:q} --out {output:q} > {log:q} 2>&1"


QUERY_RUNS = [
    *(
        expand(rules.queries_mysql.output, target=QUERY_TARGETS)
        if "mysql" in QUERY_ENGINES
        else []
    ),
    *(rules.queries_duckdb.output if "duckdb" in QUERY_ENGINES else []),
    *(
        expand(rules.queries_lsdb.output, target=QUERY_TARGETS)
        if "lsdb" in QUERY_ENGINES
        else []
    ),
]


rule queries_check:
    input:
        QUERY_RUNS,
    output:
        f"{RES}/queries/check.json",
    log:
        f"{RES}/logs/queries/check.log",
    conda:
        ENV_PY
    resources:
        **job_resources("queries_check"),
    shell:
        "catbench queries-check --inputs {input:q} --out {output:q} > {log:q} 2>&1"


rule queries:
    input:
        QUERY_RUNS,
        rules.queries_check.output,
