# Stage `partition`: Qserv chunks as a map/reduce (see workflow/catbench/partition.md):
# one map job per catalog part, one reduce job per group of chunks, never one per chunk.


rule partition_map:
    input:
        objects=rules.catalog_part.output.objects,
        sources=rules.catalog_part.output.sources,
    output:
        staging=temp(directory(f"{RES}/partition/staging/part-{{part}}")),
        metrics=f"{RES}/metrics/jobs/partition_map-{{part}}.json",
    params:
        # catalog: the sky region's ra range sets the group wedges
        cfg=cfg_json("partition", "catalog"),
        groups=len(GROUPS),
    log:
        f"{RES}/logs/partition/map-{{part}}.log",
    benchmark:
        f"{RES}/benchmarks/partition/map-{{part}}.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("partition_map"),
    shell:
        # One BLAS thread: numpy's OpenBLAS pool costs 0.1 CPU-s per job start, unused here.
        "OPENBLAS_NUM_THREADS=1 catbench partition-map --config {params.cfg:q} --objects {input.objects} "
        "--sources {input.sources} --out {output.staging} --groups {params.groups} "
        "--metrics {output.metrics} > {log} 2>&1"


rule partition_reduce:
    input:
        staging=expand(f"{RES}/partition/staging/part-{{part}}", part=PARTS),
        objects=expand(rules.catalog_part.output.objects, part=PARTS),
        sources=expand(rules.catalog_part.output.sources, part=PARTS),
        # TSV lines are glued from the text the catalog stage made (catalog.smk)
        **({"text_objects": expand(rules.catalog_part.output.objects_text, part=PARTS),
            "patch_text": [rules.catalog_patch.output.objects_text,
                           rules.catalog_patch.output.sources_text]} if TEXT else {}),
    output:
        manifest=f"{RES}/chunks/groups/group-{{group}}.tsv",
        metrics=f"{RES}/metrics/jobs/partition_reduce-{{group}}.json",
    params:
        chunks=lambda wildcards, output: Path(output.manifest).parent.parent,
        formats=" ".join(config["partition"]["formats"]),
        text=lambda wildcards, input: (
            f"--text-objects {' '.join(input.text_objects)} "
            f"--patch-text {' '.join(input.patch_text)}" if TEXT else ""),
    log:
        f"{RES}/logs/partition/reduce-{{group}}.log",
    benchmark:
        f"{RES}/benchmarks/partition/reduce-{{group}}.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("partition_reduce"),
    threads: job_threads("partition_reduce")
    shell:
        # Arrow threads = job threads: Snakemake already runs jobs side by side.
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS=1 catbench partition-reduce "
        "--staging {input.staging} --objects {input.objects} --sources {input.sources} "
        "{params.text} --group {wildcards.group} --formats {params.formats} --chunks {params.chunks} "
        "--manifest {output.manifest} --metrics {output.metrics} > {log} 2>&1"


rule index_input:
    input:
        staging=expand(f"{RES}/partition/staging/part-{{part}}", part=PARTS),
    output:
        numeric=directory(f"{RES}/index/input"),
        seed=directory(f"{RES}/index/input_seed"),
        metrics=f"{RES}/metrics/jobs/index_input.json",
    params:
        files=config["partition"]["index_files"],
    log:
        f"{RES}/logs/partition/index_input.log",
    benchmark:
        f"{RES}/benchmarks/partition/index_input.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("index_input"),
    threads: job_threads("index_input")
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS=1 catbench index-input --staging {input.staging} --files {params.files} "
        "--out {output.numeric} --out-seed {output.seed} --metrics {output.metrics} "
        "> {log} 2>&1"


rule chunk_list:
    input:
        manifests=expand(rules.partition_reduce.output.manifest, group=GROUPS),
        jobs=[
            rules.catalog_patch.output.metrics,
            *expand(rules.catalog_part.output.metrics, part=PARTS),
            *expand(rules.partition_map.output.metrics, part=PARTS),
            *expand(rules.partition_reduce.output.metrics, group=GROUPS),
            rules.index_input.output.metrics,
        ],
    output:
        chunks=f"{RES}/chunks/chunks.tsv",
        summary=f"{RES}/metrics/partition.json",
    log:
        f"{RES}/logs/partition/chunk_list.log",
    conda:
        ENV_PY
    resources:
        **job_resources("chunk_list"),
    shell:
        "catbench chunk-list --manifests {input.manifests} --out {output.chunks} "
        "--job-metrics {input.jobs} --summary {output.summary} > {log} 2>&1"


rule partition:
    input:
        rules.chunk_list.output.chunks,
        rules.chunk_list.output.summary,
        rules.index_input.output.numeric,
        rules.index_input.output.seed,
