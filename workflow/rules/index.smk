# Stage `index` (index.source: generate; index.source: file is index_read below): the secondary-index input straight from the
# catalog generator's positions — no catalog, no Source rows, no chunk files — with the
# same files and bytes as the partition stage writes (workflow/catbench/prepare/index_only.py).
# index.jobs jobs each write their share of the files (Slurm spreads them over nodes, each
# job over its cores); index_generate links them into one folder per variant.
INDEX_JOBS = [f"{p:05d}" for p in range(config["index"]["jobs"])]


rule index_generate_part:
    output:
        staging=temp(directory(f"{RES}/index/staging/part-{{part}}")),
        metrics=f"{RES}/metrics/jobs/index_generate-{{part}}.json",
    log:
        f"{RES}/logs/index/generate-{{part}}.log",
    benchmark:
        f"{RES}/benchmarks/index/generate-{{part}}.tsv"
    conda:
        ENV_PY
    threads: job_threads("index_generate_part")
    resources:
        **job_resources("index_generate_part"),
    params:
        cfg=cfg_json("seed", "catalog", "partition"),
        parts=len(INDEX_JOBS),
        # a part's folders are named as the merged ones (index_only.merge_parts)
        numeric=RUN.index_folders["bigint"],
        char28=RUN.index_folders["char28"],
    shell:
        # worker processes = job threads; one BLAS thread each (numpy's pool is unused here)
        "OPENBLAS_NUM_THREADS=1 catbench index-generate --config {params.cfg:q} --part {wildcards.part:q} "
        "--parts {params.parts:q} --workers {threads} --out {output.staging:q}/{params.numeric:q} "
        "--out-char28 {output.staging:q}/{params.char28:q} --metrics {output.metrics:q} > {log:q} 2>&1"


rule index_generate:
    input:
        staging=expand(rules.index_generate_part.output.staging, part=INDEX_JOBS),
        metrics=expand(rules.index_generate_part.output.metrics, part=INDEX_JOBS),
    output:
        numeric=directory(INDEX_INPUT["bigint"]),
        char28=directory(INDEX_INPUT["char28"]),
        summary=f"{RES}/metrics/index.json",
    log:
        f"{RES}/logs/index/generate.log",
    benchmark:
        f"{RES}/benchmarks/index/generate.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("index_generate"),
    params:
        order_args=INDEX_ORDER,
    shell:
        "catbench index-merge --staging {input.staging:q} --out {output.numeric:q} --out-char28 {output.char28:q} "
        "--job-metrics {input.metrics:q} --summary {output.summary:q} {params.order_args} > {log:q} 2>&1"


# What a B-tree load of that input should expect (prepare/working_set.md): the insert working
# set against the loads' buffer pool, from a sample of the input, before the loads; the report
# shows it beside each load's measured collapse. Its params are the pool and the labels only,
# so a change of strategies re-runs nothing here.
rule index_working_set:
    input:
        INDEX_INPUT["bigint"],
    output:
        WORKING_SET,
    log:
        f"{RES}/logs/index/working_set.log",
    conda:
        ENV_PY
    resources:
        **job_resources("index_working_set"),
    params:
        setup=RUN.pool_setup,
    shell:
        "catbench index-working-set --input {input:q} --setup {params.setup:q} --out {output:q} > {log:q} 2>&1"


# index.source: file: the index input from the user's own Parquet/CSV files
# (prepare/own/index.py), checked row by row before anything is written. The files are its
# input (a newer file re-runs it) and their sizes and mtimes its params (so does a file
# replaced by an older one); sources.json records each file's bytes, mtime, CRC-32 and rows.
rule index_read:
    input:
        OWN_FILES,
    output:
        numeric=directory(INDEX_INPUT["bigint"]),
        char28=directory(INDEX_INPUT["char28"]),
        summary=f"{RES}/metrics/index.json",
        metrics=f"{RES}/metrics/jobs/index_read.json",
        sources=OWN_SOURCES,
    log:
        f"{RES}/logs/index/read.log",
    benchmark:
        f"{RES}/benchmarks/index/read.tsv"
    conda:
        ENV_PY
    threads: job_threads("index_read")
    resources:
        **job_resources("index_read"),
    params:
        cfg=cfg_json("partition", "index"),
        files=RUN.as_json(OWN_FINGERPRINT),
    shell:
        "catbench index-read --config {params.cfg:q} --threads {threads} --out {output.numeric:q} "
        "--out-char28 {output.char28:q} --sources {output.sources:q} --metrics {output.metrics:q} "
        "--summary {output.summary:q} > {log:q} 2>&1"


# The partition stage, the generator and the files can each write results/<run>/index/input*:
# the config says which.
if INDEX_SOURCE == "generate":

    ruleorder: index_generate > index_read
    ruleorder: index_generate > index_input

else:

    ruleorder: index_input > index_generate


if INDEX_SOURCE == "file":

    ruleorder: index_read > index_generate
    ruleorder: index_read > index_input

else:

    ruleorder: index_input > index_read
