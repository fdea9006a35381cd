# Stage `catalog`: a seeded base patch, duplicated over the sky region, in parts.
# With TSV chunk files (partition.formats), it also writes TSV text once (Arrow IPC):
# the patch's shared columns, each part's varying columns (of the tables in
# core/sky/copies.py PART_TEXT); the partition stage glues them (prepare/rowtext.py).
TEXT = "tsv" in config["partition"]["formats"]
# {"objects": "Object", ...}: the tables with part text files, by their output name
PART_TEXT = RUN.part_text(TEXT)
# Spatial ids (catalog.id_layout) hold each object's chunk: the catalog reads the chunker's
# stripes too, not the rest of the partition section (a change there re-runs no catalog job).
# catalog.id_layout: source: the parts name Objects by the patch file's own ids
OWN_ID_LAYOUT = config["catalog"]["id_layout"] == "source"
CATALOG_CFG = RUN.catalog_cfg


# catalog.patch.file: the patch read from the user's files (prepare/own/patch.py); the files
# are its input (a newer file re-runs it) and their sizes and mtimes its params (so does a
# file replaced by an older one); files.json records each file's bytes, mtime, CRC-32 and rows.
PATCH_OUT = (
    {"own_ids": f"{RES}/catalog/patch/own_ids.parquet", "files": PATCH_RECORD}
    if PATCH_FILES
    else {}
)


rule catalog_patch:
    input:
        PATCH_FILES,
    output:
        **(
            {
                "objects_text": f"{RES}/catalog/patch/Object.text.arrow",
                "sources_text": f"{RES}/catalog/patch/Source.text.arrow",
            }
            if TEXT
            else {}
        ),
        **PATCH_OUT,
        objects=f"{RES}/catalog/patch/Object.parquet",
        sources=f"{RES}/catalog/patch/Source.parquet",
        metrics=f"{RES}/metrics/jobs/patch.json",
    log:
        f"{RES}/logs/catalog/patch.log",
    benchmark:
        f"{RES}/benchmarks/catalog/patch.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("catalog_patch"),
    params:
        cfg=CATALOG_CFG,
        files=RUN.as_json(PATCH_FINGERPRINT),
        text_args=lambda wildcards, output: (
            RUN.flag("text", [output.objects_text, output.sources_text])
            if TEXT
            else ""
        ),
        file_args=lambda wildcards, output: (
            " ".join(
                [
                    RUN.flag("own-ids", output.own_ids),
                    RUN.flag("files", output.files),
                    RUN.flag("manifest", RUN.patch_manifest),
                ]
            )
            if PATCH_OUT
            else ""
        ),
    shell:
        "catbench patch --config {params.cfg:q} --objects {output.objects:q} "
        "--sources {output.sources:q} --metrics {output.metrics:q} {params.text_args} {params.file_args} "
        "> {log:q} 2>&1"


rule catalog_part:
    input:
        **({"own_ids": PATCH_OUT["own_ids"]} if OWN_ID_LAYOUT else {}),
        objects=rules.catalog_patch.output.objects,
        sources=rules.catalog_patch.output.sources,
    output:
        **{
            f"{n}_text": f"{RES}/catalog/{t}/part-{{part}}.text.arrow"
            for n, t in PART_TEXT.items()
        },
        objects=f"{RES}/catalog/Object/part-{{part}}.parquet",
        sources=f"{RES}/catalog/Source/part-{{part}}.parquet",
        metrics=f"{RES}/metrics/jobs/catalog-{{part}}.json",
    log:
        f"{RES}/logs/catalog/part-{{part}}.log",
    benchmark:
        f"{RES}/benchmarks/catalog/part-{{part}}.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("catalog_part"),
    params:
        cfg=CATALOG_CFG,
        text_args=lambda wildcards, output: " ".join(
            RUN.flag(f"text-{n}", getattr(output, f"{n}_text")) for n in PART_TEXT
        ),
        own_args=lambda wildcards, input: (
            RUN.flag("own-ids", input.own_ids) if OWN_ID_LAYOUT else ""
        ),
    shell:
        "OPENBLAS_NUM_THREADS=1 catbench catalog-part --config {params.cfg:q} --part {wildcards.part:q} "
        "--patch-objects {input.objects:q} --patch-sources {input.sources:q} "
        "--objects {output.objects:q} --sources {output.sources:q} --metrics {output.metrics:q} "
        "{params.text_args} {params.own_args} > {log:q} 2>&1"


rule catalog:
    input:
        expand(f"{RES}/catalog/Object/part-{{part}}.parquet", part=PARTS),
        expand(f"{RES}/catalog/Source/part-{{part}}.parquet", part=PARTS),
