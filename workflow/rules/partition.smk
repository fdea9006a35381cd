# Stage `partition`: Qserv chunks as a map/reduce (see workflow/catbench/prepare/partition.md):
# one map job per run of catalog parts (partition.max_rows_per_map), one reduce job per
# group of chunks, never one per chunk.
# The parts of each map job (core/sky/copies.py): {"00000": ["00000", "00001", ...], ...}
# Arrow on glibc's heap, kept between buffers (not returned and re-faulted: the kernel
# zeroing fresh pages was 13% of a reduce's time), in one arena for every thread (a
# thread's own arena maps each buffer over 64 MB afresh: 1.5x a threaded reduce's sys
# time). prepare/partition.md has the measurements.
ARROW_HEAP = (
    "ARROW_DEFAULT_MEMORY_POOL=system MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=1073741824 "
    "MALLOC_TRIM_THRESHOLD_=68719476736 MALLOC_TOP_PAD_=268435456 "
)
# The reduce's Arrow buffers on mimalloc: a text gather's buffer is resized twice (grown, then
# shrunk to fit), and Arrow's aligned resize on glibc allocates anew and copies each time
# (more bytes copied than gathered); mimalloc keeps a buffer in place when it still fits. The
# TSV partition: 0.89x the CPU, 0.90x the wall, peak RSS 318 against 360 MiB (n=8 alternated,
# tmpfs). The map gained nothing measurable and stays on glibc's heap.
REDUCE_HEAP = ARROW_HEAP.replace(
    "ARROW_DEFAULT_MEMORY_POOL=system", "ARROW_DEFAULT_MEMORY_POOL=mimalloc"
)
MAPS = RUN.maps
# Every part's staging dir, in part order: inside the dir of the map job that wrote it.
STAGING = [
    f"{RES}/partition/staging/map-{m}/part-{p}"
    for m, parts in MAPS.items()
    for p in parts
]


rule partition_map:
    input:
        objects=lambda wildcards: expand(
            rules.catalog_part.output.objects, part=MAPS[wildcards.batch]
        ),
        sources=lambda wildcards: expand(
            rules.catalog_part.output.sources, part=MAPS[wildcards.batch]
        ),
    output:
        staging=temp(directory(f"{RES}/partition/staging/map-{{batch}}")),
        metrics=f"{RES}/metrics/jobs/partition_map-{{batch}}.json",
    log:
        f"{RES}/logs/partition/map-{{batch}}.log",
    benchmark:
        f"{RES}/benchmarks/partition/map-{{batch}}.tsv"
    wildcard_constraints:
        batch=r"\d{5}",
    conda:
        ENV_PY
    threads: job_threads("partition_map")
    resources:
        **job_resources("partition_map"),
    params:
        # catalog: the sky region's ra range sets the group wedges
        cfg=cfg_json("partition", "catalog"),
        groups=len(GROUPS),
        heap_args=ARROW_HEAP,
    shell:
        # One BLAS thread: numpy's OpenBLAS pool costs 0.1 CPU-s per job start, unused here.
        # {threads} parts mapped at once (numpy and pyarrow release the GIL).
        "{params.heap_args}OPENBLAS_NUM_THREADS=1 catbench partition-map --config {params.cfg:q} --objects {input.objects:q} "
        "--sources {input.sources:q} --out {output.staging:q} --groups {params.groups:q} --threads {threads} "
        "--metrics {output.metrics:q} > {log:q} 2>&1"


rule partition_reduce:
    input:
        **{
            f"text_{n}": expand(
                getattr(rules.catalog_part.output, f"{n}_text"), part=PARTS
            )
            for n in PART_TEXT
        },
        **(
            {
                "patch_text": [
                    rules.catalog_patch.output.objects_text,
                    rules.catalog_patch.output.sources_text,
                ]
            }
            if TEXT
            else {}
        ),
        maps=expand(rules.partition_map.output.staging, batch=MAPS),
        objects=expand(rules.catalog_part.output.objects, part=PARTS),
        sources=expand(rules.catalog_part.output.sources, part=PARTS),
        # a part's shared columns are the patch's (prepare/partition.py SharedRows)
        patch=[rules.catalog_patch.output.objects, rules.catalog_patch.output.sources],
        # TSV lines are glued from the text the catalog stage made (catalog.smk)
    output:
        manifest=f"{RES}/chunks/groups/group-{{group}}.tsv",
        metrics=f"{RES}/metrics/jobs/partition_reduce-{{group}}.json",
    log:
        f"{RES}/logs/partition/reduce-{{group}}.log",
    benchmark:
        f"{RES}/benchmarks/partition/reduce-{{group}}.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("partition_reduce"),
    params:
        chunks=lambda wildcards, output: RUN.folder(output.manifest, 2),
        heap_args=REDUCE_HEAP,
        staging=STAGING,
        formats=config["partition"]["formats"],
        text_args=lambda wildcards, input: " ".join(
            [RUN.flag(f"text-{n}", getattr(input, f"text_{n}")) for n in PART_TEXT]
            + ([RUN.flag("patch-text", input.patch_text)] if TEXT else [])
        ),
    shell:
        # One thread: at least jobs.cpus reduces run side by side (core/infra/config n_groups).
        "{params.heap_args}OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 catbench partition-reduce "
        "--staging {params.staging:q} --objects {input.objects:q} --sources {input.sources:q} --patch {input.patch:q} "
        "{params.text_args} --group {wildcards.group:q} --formats {params.formats:q} --chunks {params.chunks:q} "
        "--manifest {output.manifest:q} --metrics {output.metrics:q} > {log:q} 2>&1"


rule index_input:
    input:
        maps=expand(rules.partition_map.output.staging, batch=MAPS),
    output:
        numeric=directory(INDEX_INPUT["bigint"]),
        char28=directory(INDEX_INPUT["char28"]),
        metrics=f"{RES}/metrics/jobs/index_input.json",
    log:
        f"{RES}/logs/partition/index_input.log",
    benchmark:
        f"{RES}/benchmarks/partition/index_input.tsv"
    conda:
        ENV_PY
    threads: job_threads("index_input")
    resources:
        **job_resources("index_input"),
    params:
        files=config["partition"]["index_files"],
        staging=STAGING,
        order_args=INDEX_ORDER,
    shell:
        "OMP_NUM_THREADS={threads} OPENBLAS_NUM_THREADS=1 catbench index-input --staging {params.staging:q} --files {params.files:q} "
        "--out {output.numeric:q} --out-char28 {output.char28:q} --metrics {output.metrics:q} {params.order_args} "
        "> {log:q} 2>&1"


rule chunk_list:
    input:
        manifests=expand(rules.partition_reduce.output.manifest, group=GROUPS),
        jobs=[
            rules.catalog_patch.output.metrics,
            *expand(rules.catalog_part.output.metrics, part=PARTS),
            *expand(rules.partition_map.output.metrics, batch=MAPS),
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
    params:
        cfg=cfg_json("catalog", "partition"),
    shell:
        "catbench chunk-list --config {params.cfg:q} --manifests {input.manifests:q} --out {output.chunks:q} "
        "--job-metrics {input.jobs:q} --summary {output.summary:q} > {log:q} 2>&1"


rule partition:
    input:
        rules.chunk_list.output.chunks,
        rules.chunk_list.output.summary,
        rules.index_input.output.numeric,
        rules.index_input.output.char28,
