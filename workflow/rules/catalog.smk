# Stage `catalog`: a seeded base patch, duplicated over the sky region, in parts.


rule catalog_patch:
    output:
        objects=f"{RES}/catalog/patch/Object.parquet",
        sources=f"{RES}/catalog/patch/Source.parquet",
        metrics=f"{RES}/metrics/jobs/patch.json",
    params:
        cfg=cfg_json("seed", "catalog"),
    log:
        f"{RES}/logs/catalog/patch.log",
    benchmark:
        f"{RES}/benchmarks/catalog/patch.tsv"
    conda:
        ENV_PY
    resources:
        mem_mb=PART_MEM_MB,
        runtime=30,
    shell:
        "catbench patch --config {params.cfg:q} --objects {output.objects} "
        "--sources {output.sources} --metrics {output.metrics} > {log} 2>&1"


rule catalog_part:
    input:
        objects=rules.catalog_patch.output.objects,
        sources=rules.catalog_patch.output.sources,
    output:
        objects=f"{RES}/catalog/Object/part-{{part}}.parquet",
        sources=f"{RES}/catalog/Source/part-{{part}}.parquet",
        metrics=f"{RES}/metrics/jobs/catalog-{{part}}.json",
    params:
        cfg=cfg_json("seed", "catalog"),
    log:
        f"{RES}/logs/catalog/part-{{part}}.log",
    benchmark:
        f"{RES}/benchmarks/catalog/part-{{part}}.tsv"
    conda:
        ENV_PY
    resources:
        mem_mb=PART_MEM_MB,
        runtime=60,
    shell:
        "catbench catalog-part --config {params.cfg:q} --part {wildcards.part} "
        "--patch-objects {input.objects} --patch-sources {input.sources} "
        "--objects {output.objects} --sources {output.sources} --metrics {output.metrics} "
        "> {log} 2>&1"


rule catalog:
    input:
        expand(f"{RES}/catalog/Object/part-{{part}}.parquet", part=PARTS),
        expand(f"{RES}/catalog/Source/part-{{part}}.parquet", part=PARTS),
