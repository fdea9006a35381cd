"""The workflow's checks before any job that reach past one stage (``preflight``, called once by
dag.py ``checked``, which ``Dag.of`` calls): the config, the targets, the run's folders, the
user's files, the run's space estimate with the predict stage's rungs (which load on the
ladder's targets after the run's own jobs), and the system tools."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ...core.infra.config import ConfigError
from ...core.infra.runfolders import check_run, check_unlock
from ...load import estimate as load_estimate
from ...load.spec import EstimateSpec
from ...predict.spec import InRun, rung_config


def preflight_folders(cfg: dict, argv: list[str], workdir: Path) -> None:
    """TargetError naming the folder when a run's folder is a link or another's rung, or when
    ``--unlock`` would unlock a live run."""
    check_run(cfg)
    if "--unlock" in argv:
        check_unlock(workdir)


def preflight_estimate(cfg: dict, results: Path) -> dict:
    """The run's estimate (load/estimate.py) with the predict stage's rungs beside its jobs."""
    est = load_estimate.estimate(EstimateSpec.of(cfg), Path(results))
    if "predict" not in cfg["stages"]:
        return est
    rungs = range(2, 2 + len(InRun.of(cfg).factors))
    return load_estimate.with_rungs(est, {f"rung {k}": load_estimate.estimate(EstimateSpec.of(rung_config(cfg, k)))
                                          for k in rungs})


def preflight_lines(est: dict) -> list[str]:
    """The estimate for a person, its targets only (every job's: `catbench estimate`)."""
    return load_estimate.lines(est, jobs=False)


class PreflightError(Exception):
    """A check before any job failed; its message is the run's first line (Snakemake's error)."""


@dataclass(frozen=True)
class Invocation:
    """What the checks read of the Snakemake command: plain values (``of`` takes them from the
    workflow object), so the same checks run from the Snakefile and, in-process, from a test."""
    basedir: Path
    configfiles: tuple = ()
    overrides: dict = field(default_factory=dict)   # --config, as Snakemake parsed it
    main: bool = True                                # the snakemake process, not a job's re-parse
    dryrun: bool = False
    keep_going: bool = False

    @classmethod
    def of(cls, workflow) -> Invocation:
        return cls(Path(workflow.basedir), tuple(workflow.overwrite_configfiles or ()),
                   dict(workflow.config_settings.config), workflow.is_main_process, bool(workflow.dryrun),
                   bool(getattr(workflow.execution_settings, "keep_going", False)))


@dataclass
class Preflight:
    """What the rules read of the checks before any job: the user's index and patch files,
    their fingerprints and the records beside them."""
    own_files: list = field(default_factory=list)
    own_fingerprint: list = field(default_factory=list)
    own_sources: str = ""
    patch_files: list = field(default_factory=list)
    patch_fingerprint: list = field(default_factory=list)
    patch_record: str = ""


def _say(line: str) -> None:
    print(f"catbench: {line}", file=sys.stderr)


def preflight(inv: Invocation, config: dict, argv: list[str]) -> Preflight:
    """Every check before any job, called once by dag.py ``checked``: ``config``
    validated in place (a --configfile over its base, --config overrides typed as YAML, each
    file read strictly), the targets, the run's folders, server.ram's cgroup, the user's files,
    the space estimate and the system tools (the main process only where a job's re-parse would
    see its siblings' work). PreflightError carries the first line."""
    from ...core.infra import config as cb_config
    from ...core.infra.targets import TargetError
    from ...prepare.own import spec as patch_spec
    main = inv.main
    try:
        for file in inv.configfiles:   # Snakemake lets a repeated key win silently
            cb_config.read_file(file, "--configfile")
        valid = cb_config.validate(cb_config.typed_overrides(
            cb_config.layered(config, inv.basedir), dict(inv.overrides)),
            resolve=lambda c: patch_spec.resolve(c, results=Path("results")))
    except cb_config.ConfigError as e:
        raise PreflightError(str(e)) from None
    config.clear()
    config.update(valid)
    try:
        _targets(config, main, argv)
    except TargetError as e:
        raise PreflightError(str(e)) from None
    res = f"results/{config['run']}"
    out = Preflight(own_sources=f"{res}/index/sources.json", patch_record=f"{res}/catalog/patch/files.json")
    _own_files(config, main, out)
    _patch_files(config, main, out)
    if main:
        _space(inv, config, res, argv)
        _system_tools(inv, config, argv)
    return out


def _targets(config: dict, main: bool, argv: list[str]) -> None:
    """Targets without a Slurm node, now (a writable directory or nearest existing parent; the
    jobs create them: a dry run creates nothing outside results/; free space is each target's
    first job's, on its node); the run's folders; server.ram's memory cgroup."""
    from ...core.infra import targets as cb_targets
    from ...core.server import memory
    cb_targets.check_targets(config, [t for t, v in config["targets"].items() if not v.get("node")],
                             space=False, create=False)
    if main:    # no run folder followed through a link, no rung's folder taken
        preflight_folders(config, argv, Path.cwd())
    if config["server"]["ram"] and main:
        try:
            memory.check()
        except memory.MemoryLimitError as e:
            raise PreflightError(f"catbench: nothing was started: {e}") from None


def _own_files(config: dict, main: bool, out: Preflight) -> None:
    """index.source: file: the user's files, their columns checked now (a footer or a header
    each); a file changed since the index input was read from it said before it is read again."""
    from ...core.infra import sources
    if config["index"]["source"] != "file":
        return
    try:
        own = sources.sources(config["index"]["file"])
        for src in own:
            sources.check_columns(src, sources.column_map(config["index"]["file"]))
    except sources.SourceError as e:
        raise PreflightError(f"catbench: nothing was started: {e}") from None
    out.own_files = [str(s.path) for s in own]
    read = json.loads(Path(out.own_sources).read_text())["files"] if Path(out.own_sources).is_file() else []
    out.own_fingerprint = sources.fingerprint(own, read, content=main)
    if main and read:
        for line in sources.changed(read, out.own_fingerprint):
            _say(f"index.file: {line} since the index input was read: it is read again")


def _patch_files(config: dict, main: bool, out: Preflight) -> None:
    """catalog.patch.file: the user's patch files (read and checked by the validation); a file
    changed since the patch was read from it said before it is read again."""
    from ...core.infra import sources
    from ...prepare import spec as prepare_spec
    from ...prepare.own import manifest, patch
    if not config["catalog"]["patch"]["file"]["paths"]:
        return
    files = sources.sources(config["catalog"]["patch"]["file"], key=patch.KEY)
    out.patch_files = [str(s.path) for s in files]
    read = json.loads(Path(out.patch_record).read_text())["files"] if Path(out.patch_record).is_file() else []
    made = manifest.read(manifest.path_of("results", config["run"]),
                         prepare_spec.PrepareSpec.of(config).catalog.patch_file, files)
    out.patch_fingerprint = sources.fingerprint(files, (made or {}).get("files", read), content=main)
    if main and read:
        for line in sources.changed(read, out.patch_fingerprint):
            _say(f"{patch.KEY}: {line} since the patch was read: it is read again")


def _space(inv: Invocation, config: dict, res: str, argv: list[str]) -> None:
    """What the run will need on each target (load/estimate.py), printed, and a target with less
    free space refused (targets on a Slurm node: by their jobs there). With --keep-going a too
    small target only warns: its own jobs refuse or fail, the other targets finish."""
    from ...core.infra import targets as cb_targets
    from ...core.infra.targets import TargetError
    try:   # the predict stage's rungs counted
        est = preflight_estimate(config, Path(res))
    except ConfigError as e:
        raise PreflightError(str(e)) from None
    for line in preflight_lines(est):
        _say(line)
    # --unlock starts no job: a target's room must not keep a stale lock in place
    if not config["index"]["space_check"] or "--unlock" in argv:
        return
    try:
        cb_targets.check_targets(
            config, [t for t, v in config["targets"].items() if not v.get("node")], create=False,
            need={t: (e["need_bytes"], f"estimate, largest job: {e['largest_job']}; `catbench estimate`, "
                                       "index.space_check") for t, e in est["targets"].items()})
    except TargetError as e:
        # Snakemake sets its execution settings after parsing: --keep-going from the command line
        if not (inv.keep_going or "--keep-going" in argv or any(re.fullmatch(r"-[a-zA-Z]*k[a-zA-Z]*", a) for a in argv[1:])):
            raise PreflightError(f"catbench: nothing was started: {e}") from None
        _say(f"warning: {e}")


def _system_tools(inv: Invocation, config: dict, argv: list[str]) -> None:
    """The system tools the config's stages use (a target on a Slurm node has the node's, checked
    by its jobs): a missing one would fail the first job that needs it, after the work before it."""
    from ...core.infra.jobs import system
    if any(v.get("node") for v in config["targets"].values()):
        return
    missing = system.missing_packages(config)
    if not missing:
        return
    how = (f"not installed: {' '.join(missing)}; `make run CONFIG=<this config>` installs them as "
           f"root, or: bash workflow/scripts/install-system.sh {' '.join(system.needed_tools(config))}")
    # a dry run (-n, -np, --dry-run) only says so: Snakemake sets it after parsing
    if inv.dryrun or any(a in ("--dry-run", "--dryrun") or re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", a)
                              for a in argv[1:]):
        _say(f"warning: {how}")
    else:
        raise PreflightError(f"catbench: nothing was started: the stages {', '.join(config['stages'])} need "
                             f"packages {how}")
