# Stages `tables` and `report`: the metrics files of this config's jobs aggregated with DuckDB
# (SQL in resources/sql/), then plots and a single self-contained HTML page.

# one list each: the tables module's and the plots module's
TABLE_NAMES, PLOT_NAMES = RUN.table_names, RUN.plot_names


# What the tables read: the results this config's jobs write. Another config's results (a
# renamed target, a strategy no longer run) stay on disk; the tables and the report leave them
# out and name them (catbench tables/report --inputs).
TABLE_INPUTS = [
    # an index-only run's stage summary, by name: index_generate or index_read writes it
    (
        rules.chunk_list.output
        if INDEX_SOURCE == "partition"
        else f"{RES}/metrics/index.json"
    ),
    expand(rules.target_info.output, target=TARGETS),
    [rules.fio.input] if "fio" in STAGES else [],
    [rules.load_index.input] if "load_index" in STAGES else [],
    [rules.queries.input] if "queries" in STAGES else [],
    [rules.restart.input] if "restart" in STAGES else [],
    [rules.cluster.input] if "cluster" in STAGES else [],
]


rule tables:
    input:
        TABLE_INPUTS,
    output:
        **{
            t: report(
                f"{RES}/tables/{t}.csv",
                caption=f"../../resources/report/{t}.rst",
                category="Tables",
            )
            for t in TABLE_NAMES
        },
        summary=f"{RES}/tables/summary.md",
        provenance=f"{RES}/tables/provenance.json",
    log:
        f"{RES}/logs/tables.log",
    benchmark:
        f"{RES}/benchmarks/tables.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("tables"),
    params:
        results=lambda wildcards, output: RUN.folder(output.summary, 2),
        require=TABLE_REQUIRE,
        cfg=cfg_json("report"),
    shell:
        "catbench tables --results {params.results:q} --require {params.require:q} "
        "--config {params.cfg:q} --inputs {input:q} > {log:q} 2>&1"


rule report_html:
    input:
        tables=rules.tables.output,
        results=TABLE_INPUTS,
        # the answer at scale the report opens with (predict/prediction.json)
        prediction=[PREDICTION] if "predict" in STAGES else [],
    output:
        **{
            p: report(
                f"{RES}/report/{p}.png",
                caption=f"../../resources/report/plot_{p}.rst",
                category="Plots",
            )
            for p in PLOT_NAMES
        },
        index=report(
            f"{RES}/report/index.html",
            caption="../../resources/report/report.rst",
            category="Report",
        ),
    log:
        f"{RES}/logs/report.log",
    benchmark:
        f"{RES}/benchmarks/report.tsv"
    conda:
        ENV_PY
    resources:
        **job_resources("report_html"),
    params:
        results=lambda wildcards, output: RUN.folder(output.index, 2),
        cfg=cfg_json("report"),
    shell:
        "catbench report --results {params.results:q} --config {params.cfg:q} "
        "--inputs {input.results:q} > {log:q} 2>&1"


rule report:
    input:
        rules.report_html.output,
