# Stages `tables` and `report`: every metrics file of the run aggregated with DuckDB
# (SQL in resources/sql/), then plots and a single self-contained HTML page.

TABLE_NAMES = [
    "storage",
    "load_time",
    "load_rate",
    "queries",
    "chunk_load",
    "restart",
    "chunks",
    "stages",
]
PLOT_NAMES = ["load_rate", "table_size", "fio", "query_latency", "restart_phases"]


rule tables:
    input:
        rules.chunk_list.output,
        expand(rules.target_info.output, target=TARGETS),
        [rules.fio.input] if "fio" in STAGES else [],
        [rules.load_index.input] if "load_index" in STAGES else [],
        [rules.queries.input] if "queries" in STAGES else [],
        [rules.restart.input] if "restart" in STAGES else [],
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
    params:
        results=lambda wildcards, output: Path(output.summary).parent.parent,
        require=TABLE_REQUIRE,
    log:
        f"{RES}/logs/tables.log",
    conda:
        ENV_PY
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "catbench tables --results {params.results} --require {params.require} "
        "> {log} 2>&1"


rule report_html:
    input:
        rules.tables.output,
    output:
        index=report(
            f"{RES}/report/index.html",
            caption="../../resources/report/report.rst",
            category="Report",
        ),
        **{
            p: report(
                f"{RES}/report/{p}.png",
                caption=f"../../resources/report/plot_{p}.rst",
                category="Plots",
            )
            for p in PLOT_NAMES
        },
    params:
        results=lambda wildcards, output: Path(output.index).parent.parent,
    log:
        f"{RES}/logs/report.log",
    conda:
        ENV_PY
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "catbench report --results {params.results} > {log} 2>&1"


rule report:
    input:
        rules.report_html.output,
