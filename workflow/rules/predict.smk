# Stage `predict`: the run's own loads laddered (workflow/catbench/predict/spec.py, InRun). Each
# rung is a run of its own at a multiple of the run's rows (results/<run>-rung<k>, its loads
# alone), started by a job that holds the measuring slot; then every load of the ladder's
# targets predicted at predict.target_rows, which the report opens with. With stage queries, the
# run's own queries answer each query class on predict.queries.nodes too, per engine.

IN_RUN = RUN.in_run
RUNG_NUMBERS = [str(k) for k in range(2, 2 + len(IN_RUN.factors))] if IN_RUN else []
PREDICTION = f"{RES}/predict/prediction.json"


rule ladder_rung:
    output:
        f"{RES}/predict/rung{{rung}}.json",
    log:
        f"{RES}/logs/predict/rung{{rung}}.log",
    benchmark:
        f"{RES}/benchmarks/predict/rung{{rung}}.tsv"
    conda:
        ENV_PY
    threads: job_threads("ladder_rung")
    resources:
        **job_resources("ladder_rung"),
    params:
        cfg=cfg_json(
            "run",
            "seed",
            "stages",
            "catalog",
            "partition",
            "index",
            "targets",
            "server",
            "load",
            "predict",
            "jobs",
        ),
        snakefile=workflow.main_snakefile,
    shell:
        "catbench ladder-rung --config {params.cfg:q} --rung {wildcards.rung:q} --snakefile {params.snakefile:q} --cores {threads} "
        "--out {output:q} > {log:q} 2>&1"


rule predict_loads:
    input:
        rungs=expand(rules.ladder_rung.output, rung=RUNG_NUMBERS),
        loads=rules.load_index.input,
        fio=[rules.fio.input] if "fio" in STAGES else [],
        queries=QUERY_RUNS if "queries" in STAGES else [],
    output:
        PREDICTION,
    log:
        f"{RES}/logs/predict/predict.log",
    conda:
        ENV_PY
    resources:
        **job_resources("predict_loads"),
    params:
        cfg=cfg_json(
            "run",
            "stages",
            "catalog",
            "partition",
            "index",
            "targets",
            "server",
            "load",
            "queries",
            "predict",
        ),
        results=[RES, *(f"results/{r}" for r in (IN_RUN.rung_runs() if IN_RUN else []))],
        targets=list(IN_RUN.targets) if IN_RUN else [],
        pool_args=f"--pool {IN_RUN.pool}" if IN_RUN and IN_RUN.pool else "",
        query_args=RUN.query_args,
    shell:
        "catbench predict --config {params.cfg:q} --results {params.results:q} "
        "--targets {params.targets:q} {params.pool_args} {params.query_args} --no-time-limit --loads-only --out {output:q} > {log:q} 2>&1"


rule predict:
    input:
        PREDICTION,
