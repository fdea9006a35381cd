"""What the rule files read of a run, made once before any job: ``Dag.of(workflow, config)``
is the one call in workflow/rules/common.smk. It runs every check (preflight.py), then
derives the DAG's values from the validated config (folders, parts, groups, loads, rungs, each
rule's request), registers the measuring resources and prints the run's plan. The rules only
read it, with the few helpers their params need (``flag``, ``folder``, ``as_json``). ``workflow`` is
the object the Snakefile hands in; Snakemake is imported only inside its own process, for its
command line's parser and its error, which a refusal is raised as (``_refused``)."""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from ...core.index import table as index_table
from ...core.infra import config as cb_config
from ...core.infra import metrics
from ...core.infra.jobs import plan as cb_plan
from ...core.infra.jobs import requests as cb_requests
from ...core.infra.jobs import slurm as cb_slurm
from ...core.infra.jobs.sizing import RunSizes
from ...core.server.loaddata import LoadError
from ...core.sky import copies
from ...load import strategies
from ...load.spec import LoadSpec
from ...predict import spec as predict_spec
from ...prepare import spec as prepare_spec
from ...prepare.own import manifest as patch_manifest
from ...report.plots import ALWAYS as PLOT_NAMES
from ...report.tables import TABLES as TABLE_NAMES
from .preflight import Invocation, Preflight, PreflightError, preflight

# what a stage writes that the tables require
_STAGE_RESULTS = {"fio": "fio", "load_index": "load", "queries": "queries", "restart": "restart", "cluster": "cluster"}


def _say(line: str) -> None:
    print(f"catbench: {line}", file=sys.stderr)


@dataclass
class Dag:
    """The run's values the rules read (one instance a Snakemake process; the rule files call it RUN:
    DAG is a name of Snakemake's own in the namespace they run in)."""
    config: dict
    workflow: object = field(repr=False)
    files: Preflight
    sizes: RunSizes
    requests: dict
    domains: list
    load_pairs: list
    load_not_run: list

    @classmethod
    def of(cls, workflow, config: dict, argv: list[str] | None = None) -> Dag:
        """Every check before any job (the config validated in place), the DAG's values, the
        measuring resources registered and the plan printed; a refusal is Snakemake's WorkflowError.
        ``argv``: the command line (default this process's)."""
        try:
            return cls._of(workflow, config, sys.argv if argv is None else argv)
        except PreflightError as e:
            raise _refused(e) from None

    @classmethod
    def _of(cls, workflow, config: dict, argv: list[str]) -> Dag:
        files, sizes, pairs, not_run = checked(Invocation.of(workflow), config, argv)
        dag = cls(config, workflow, files, sizes, cb_requests.requests(sizes), cb_requests.measure_domains(sizes),
                  pairs, not_run)
        for domain in dag.domains:
            workflow.register_resource(domain, 1)   # one measuring job at a time per node (or host)
        return dag

    # -- what the rules name ------------------------------------------------------------------
    @property
    def res(self) -> str:
        return f"results/{self.config['run']}"

    @property
    def stages(self) -> list:
        return self.config["stages"]

    @property
    def targets(self) -> list:
        return list(self.config["targets"])

    def stage_targets(self, section: str) -> list:
        """Targets of the cluster or queries stage (its ``targets``, or every target)."""
        return cb_config.stage_targets(self.config, section)

    @property
    def table_require(self) -> list:
        """What the tables require: the partition's chunks and the stages' results."""
        first = ["chunks", "metrics"] if self.config["index"]["source"] == "partition" else ["metrics"]
        return first + [_STAGE_RESULTS[s] for s in self.stages if s in _STAGE_RESULTS]

    @property
    def index_input(self) -> dict:
        """Index input per schema variant: the same folders whichever rule writes them."""
        return {v.name: f"{self.res}/index/{v.folder}" for v in index_table.VARIANTS.values()}

    @property
    def index_order(self) -> str:
        """The order of the index input's rows (index.order), for whichever rule writes it."""
        ix = self.config["index"]
        return f"--order {shlex.quote(ix['order'])} --sort-memory {shlex.quote(str(ix['sort_memory']))}"

    @cached_property
    def parts(self) -> list:
        return [f"{p:05d}" for p in range(len(copies.part_copies(self.config["catalog"])))]

    @cached_property
    def groups(self) -> list:
        return [f"{g:05d}" for g in range(cb_config.n_groups(self.config))]

    @cached_property
    def maps(self) -> dict:
        """The parts of each map job: {"00000": ["00000", "00001", ...], ...}."""
        parts = self.parts
        return {f"{m:05d}": [parts[p] for p in batch] for m, batch in enumerate(copies.map_batches(self.config))}

    def part_text(self, text: bool) -> dict:
        """{"objects": "Object", ...}: the tables with part text files, by their output name."""
        return {f"{t.lower()}s": t for t in copies.PART_TEXT} if text else {}

    @property
    def patch_manifest(self) -> str:
        return str(patch_manifest.path_of("results", self.config["run"]))

    @property
    def pool_setup(self) -> str:
        return json.dumps(prepare_spec.PoolSetup.of(self.config).as_dict(), sort_keys=True)

    @property
    def load_cfg(self) -> str:
        """A load job's config: the load and server sections less what shapes the DAG (variants,
        engines, strategies), so adding a strategy re-runs no load already done."""
        load = {k: v for k, v in self.config["load"].items() if k not in ("variants", "strategies", "engines")}
        return json.dumps({"load": load, "server": self.config["server"]}, sort_keys=True)

    @cached_property
    def in_run(self):
        return predict_spec.InRun.of(self.config) if "predict" in self.stages else None

    @property
    def query_args(self) -> str:
        return predict_spec.query_args(self.config)

    table_names = TABLE_NAMES
    plot_names = PLOT_NAMES
    local_rules = cb_requests.LOCAL
    variants = tuple(index_table.VARIANTS)
    engines = tuple(index_table.ENGINES)

    @property
    def catalog_cfg(self) -> str:
        """The catalog jobs' config: the catalog, the seed and the chunker's stripes (spatial ids hold
        each object's chunk), not the rest of the partition section."""
        part = {k: self.config["partition"][k] for k in ("num_stripes", "num_sub_stripes_per_stripe")}
        return json.dumps({"seed": self.config["seed"], "catalog": self.config["catalog"], "partition": part},
                          sort_keys=True)

    @property
    def index_folders(self) -> dict:
        """Each schema variant's index input folder name."""
        return {v.name: v.folder for v in index_table.VARIANTS.values()}

    @staticmethod
    def flag(name: str, values) -> str:
        """``--name`` with its value or values, shell-quoted."""
        return f"--{name} {shlex.join([values] if isinstance(values, str) else list(values))}"

    @staticmethod
    def folder(path, up: int = 1) -> str:
        """The folder ``up`` levels above ``path``."""
        return str(Path(path).parents[up - 1])

    @staticmethod
    def as_json(value) -> str:
        return json.dumps(value)

    def cfg_json(self, *sections) -> str:
        """The config sections a job depends on, as JSON: a change re-runs only the rules that
        read the changed section (Snakemake's params rerun trigger)."""
        return json.dumps({k: self.config[k] for k in sections}, sort_keys=True)

    def target_dir(self, target: str) -> Path:
        return cb_config.target_dir(self.config, target)

    def target_env(self, wildcards) -> str:
        """Shell prefix for a target's jobs: its server tmpdir when targets.<t>.tmpdir is set."""
        tmp = self.config["targets"][wildcards.target].get("tmpdir")
        return f"CATBENCH_TMPDIR={shlex.quote(tmp)}" if tmp else ""

    # -- what each job asks for ---------------------------------------------------------------
    def _request(self, name: str):
        if name not in self.requests:
            raise PreflightError(f"rule {name} has no request in workflow/catbench/core/infra/jobs/requests.py")
        return self.requests[name]

    def job_threads(self, rule: str):
        """threads: of a rule (jobs.cpus for a measuring rule). On a local run a measuring job
        that takes its node's CPUs takes every core given with --cores, so nothing runs beside it."""
        req, wf = self._request(rule), self.workflow

        def threads(wildcards):
            return max(req.threads, wf.cores or 1) if req.whole_node and wf.local_exec else req.threads
        return threads

    def dask_cpus(self, wildcards, threads) -> int:
        """The lsdb engine's Dask workers' CPUs: its job's own, or where they are Slurm jobs of
        their own (queries.lsdb.cluster slurm: the query job only their client) jobs.cpus."""
        return self._request("queries_lsdb").beside or threads

    def job_resources(self, rule: str) -> dict:
        """resources: of a rule: mem_mb, runtime (min), the target's node under Slurm (--nodelist)
        and, for a measuring rule, its node's measure resource (one at a time) and, where it takes
        the node's CPUs, the whole Slurm node (--exclusive, jobs.exclusive); a local rule holds
        every domain."""
        req = self._request(rule)
        res = {"mem_mb": req.mem_mb, "runtime": req.runtime}

        def slurm_extra(wildcards):
            node = self.config["targets"][wildcards.target].get("node") if wildcards.get("target") else None
            pin = f"--nodelist={shlex.quote(node)}" if node else ""
            return " ".join(x for x in ("--exclusive" if req.whole_node and self.config["jobs"]["exclusive"] else "",
                                        pin) if x)
        res["slurm_extra"] = slurm_extra
        if req.measuring:
            for domain in self.domains:
                res[domain] = lambda wildcards, d=domain: int(
                    cb_requests.measure_domain(self.sizes, wildcards.get("target")) == d)
        elif req.local:
            res.update({domain: 1 for domain in self.domains})
        return res

    # -- before the first job, and after a failed one -----------------------------------------
    def check_slurm(self) -> None:
        """onstart, under the slurm executor only: every job's request must fit its partition
        (MaxTime, CPUs, memory, a pinned node inside it), else stop naming the rule, the request,
        the limit and the key to edit; SIGTERM then cancels the submitted jobs, like Ctrl-C."""
        try:
            self._check_slurm()
        except PreflightError as e:
            raise _refused(e) from None

    def _check_slurm(self) -> None:
        wf = self.workflow
        if wf.executor_plugin is None or wf.executor_plugin.name != "slurm":
            return
        cb_slurm.cancel_on_signal(getattr(getattr(wf.scheduler, "_executor", None), "run_uuid", None))
        jobs = [self._slurm_job(job) for job in wf.dag.needrun_jobs() if not job.is_local]
        try:
            problems, warnings = cb_slurm.check_jobs(jobs, cb_slurm.read_slurm_partitions())
        except cb_slurm.SlurmError as e:
            raise PreflightError(str(e)) from None
        for w in warnings:
            _say(f"warning: {w}")
        if problems:
            raise PreflightError(f"catbench: {len(problems)} job request(s) do not fit the Slurm partitions; "
                                 "nothing was submitted:\n  " + "\n  ".join(problems))

    def _slurm_job(self, job) -> dict:
        req, res = self.requests.get(job.rule.name), job.resources
        asked = {"threads": job.threads, "mem_mb": res.get("mem_mb"), "runtime": res.get("runtime") or 0}
        target = job.wildcards_dict.get("target")
        return {"rule": job.rule.name, "slurm_partition": res.get("slurm_partition"), **asked,
                "node": cb_slurm.nodelist(res.get("slurm_extra")),
                "beside": req.beside if req else 0,
                "keys": {**(req.keys if req else {}), "node": f"targets.{target}.node"},
                "overridden": {k: req is not None and v != getattr(req, k) for k, v in asked.items()}}

    @staticmethod
    def print_failed_jobs(snakemake_logs) -> None:
        """onerror: each failed job's own first error line and its log, on the console.
        Snakemake passes its log as a list of paths (one path in older versions)."""
        paths = [snakemake_logs] if isinstance(snakemake_logs, (str, Path)) else snakemake_logs or []
        for path in paths:
            try:
                text = Path(path).read_text(errors="replace")
            except OSError:
                continue
            for line in metrics.failed_jobs(text):
                _say(line)


def checked(inv: Invocation, config: dict, argv: list[str]) -> tuple[Preflight, RunSizes, list, list]:
    """Every check before any job (preflight.py, then the DAG's own: the index source the
    queries need, the load pairs, the plan), ``config`` validated in place: the files, the
    run's sizes, the load pairs run and those not run. PreflightError carries the first line."""
    files = preflight(inv, config, argv)
    if config["index"]["source"] != "partition" and "queries" in config["stages"]:
        raise PreflightError(f"config key 'index.source': {config['index']['source']} writes no chunk files, "
                             "which the queries stage needs; remove queries from 'stages' or set index.source: "
                             "partition")
    try:
        pairs, not_run = strategies.load_pairs(config["load"]["strategies"], config["load"]["engines"],
                                               config["load"]["skip"])
    except strategies.LoadError as e:
        raise PreflightError(str(e)) from None
    sizes = RunSizes.of(config)
    if inv.main:
        _check_plan(config, sizes, pairs, argv)
    return files, sizes, pairs, not_run


def _check_plan(config: dict, sizes: RunSizes, pairs: list, argv: list[str]) -> None:
    """The run's rows and expected minutes per stage, printed; a run expected to take longer
    than run_limit_h stops here, naming it (core/infra/jobs/plan.py)."""
    stages = config["stages"]
    per = len(config["targets"]) * len(config["load"]["variants"]) if "load_index" in stages else 0
    loads = [(e, strategies.get_strategy(s).resumable) for e, s in pairs] * per
    try:
        # the load's own check of its options (sort_memory ...) fails here, before any job
        spec = LoadSpec.of(config) if loads else None
    except LoadError as e:
        raise PreflightError(f"catbench: nothing was started: config key 'load': {e}") from None
    plan = cb_plan.plan(sizes, loads, time_limit_s=spec and spec.time_limit_s)
    for line in cb_plan.lines(plan):
        _say(line)
    try:
        cb_plan.check_limit(plan, _cli_targets(argv))
    except cb_config.ConfigError as e:
        raise PreflightError(f"catbench: nothing was started: {e}") from None


def _refused(e: PreflightError) -> Exception:
    """A refusal as Snakemake's own error (its one line on the console, no traceback); only ever
    raised inside the snakemake process that parses the Snakefile."""
    from snakemake.exceptions import WorkflowError
    return WorkflowError(str(e))


def _cli_targets(argv: list[str]) -> list | None:
    """The targets on Snakemake's command line (none: `all`), read with its own parser; None when
    this process is not the snakemake command (the whole run is then checked)."""
    if not Path(argv[0]).name.startswith("snakemake") and not argv[0].endswith("snakemake/__main__.py"):
        return None
    try:
        from snakemake.cli import get_argument_parser    # the command's own parser, in its own process

        return sorted(get_argument_parser().parse_known_args(argv[1:])[0].targets or [])
    except (Exception, SystemExit):
        return None
