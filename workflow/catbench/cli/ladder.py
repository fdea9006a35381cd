"""CLI sub-commands ``catbench ladder`` (the rungs' configs of a config's ladder, predict.rows) and
``catbench ladder-rung`` (one rung of the run's own ladder, stage ``predict``, predict/spec.py InRun:
its config written beside the marker, then Snakemake on it, its loads alone, while this job holds
the run's measuring slot); and the workflow's checks before any job that reach past one stage
(``preflight``, called once from workflow/rules/common.smk: the config, the targets, the run's
folders, the user's files, the run's space estimate with its rungs, which load on the ladder's
targets after the run's own jobs, and the system tools)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..core.infra.config import ConfigError
from ..core.infra.config import validate as validate_config
from ..core.infra.files import atomic_path
from ..core.infra.runfolders import check_run, check_unlock, claim_rung
from ..load import estimate as load_estimate
from ..load.spec import EstimateSpec
from ..predict.spec import InRun, Rung, rung_config, rungs
from .common import command, guarded, out_path, read_config

COMMANDS = ("ladder", "ladder-rung")


def cmd_ladder(a) -> int:
    """The rungs of the config's ladder (predict.rows): one config file per rung in --out,
    named by its run (``<run>-rung<k>``); without --out, their names and scaled settings."""
    out_path(a.out, directory=True)
    ladder = [Rung.of(r) for r in rungs(read_config(a.config))]
    for r in ladder:    # each rung's file must be a config the workflow takes
        try:
            validate_config(r.file)
        except ConfigError as e:
            raise ConfigError(f"the rung {r.run!r} of {a.config} would be refused by the workflow "
                              f"(its run is config key 'run' + '-rung<k>'): {e}") from None
    if a.out:
        _only_this_ladder(Path(a.out), {f"{r.run}.yaml" for r in ladder})
    for r in ladder:
        print(f"{r.run}: catalog.patch.objects {r.objects}, partition.index_files {r.index_files}, load.settings "
              f"{json.dumps(r.settings)}, sort_memory {r.sort_memory}, time_limit_s {r.time_limit_s}")
        if a.out:
            (Path(a.out) / f"{r.run}.yaml").write_text(yaml.safe_dump(r.file, sort_keys=False))
    return 0


RUNG_FILE = re.compile(r".+-rung[0-9]+(-config-lsm)?\.ya?ml")


def _only_this_ladder(out: Path, names: set) -> None:
    """--out holds this ladder's rungs only: the workflow runs (and predict fits) every config
    in it. A rung config an earlier ladder wrote there (``<run>-rung<k>.yaml``, its ``run``
    its name) is removed; any other config there is refused, never removed."""
    stale, other = [], []
    for f in sorted(out.iterdir()):
        if f.name in names or f.suffix not in (".yaml", ".yml"):
            continue
        try:
            doc = yaml.safe_load(f.read_text()) if f.is_file() and not f.is_symlink() else None
        except (OSError, yaml.YAMLError):
            doc = None
        ours = RUNG_FILE.fullmatch(f.name) and isinstance(doc, dict) and doc.get("run") == f.name.rsplit(".", 1)[0]
        (stale if ours else other).append(f)
    if other:
        raise ConfigError(f"--out {out} holds {', '.join(f.name for f in other)}, not a rung config of this ladder: "
                          f"every config there is run and fitted; move it away or give another --out")
    for f in stale:
        f.unlink()
        print(f"removed {f}: a rung of an earlier ladder, not of this one")


def ladder_rung(a) -> None:
    """Rung --rung of the run's ladder: its config (``<marker>.yaml``), Snakemake's run of its
    loads (results/<run>-rung<k>), then --out naming its results; a failed rung writes no --out."""
    rung = rung_config(read_config(a.config), a.rung)
    try:
        validate_config(rung)
    except ConfigError as e:
        raise ConfigError(f"the rung {rung['run']!r} would be refused by the workflow: {e}") from None
    claim_rung(rung, read_config(a.config)["run"], a.rung)   # its folders this ladder's, never a user's run
    out = Path(a.out)
    config = out.with_suffix(".yaml")
    config.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(config) as tmp:
        tmp.write_text(yaml.safe_dump(rung, sort_keys=False))
    objects, pool = rung["catalog"]["patch"]["objects"], rung["load"]["settings"]
    print(f"rung {a.rung}: run {rung['run']}, catalog.patch.objects {objects:,}, load.settings {json.dumps(pool)}",
          flush=True)
    t0 = time.monotonic()
    # its loads alone: the run's fio figures stand for the same targets
    again = ["load_index", "-s", a.snakefile, "--configfile", str(config)]
    done = subprocess.run([sys.executable, "-m", "snakemake", *again, "--cores", str(a.cores), "--rerun-incomplete"],
                          check=False)
    if done.returncode:
        raise ValueError(f"the rung's run {rung['run']} failed (exit {done.returncode}): its job's log is named "
                         f"above; `snakemake {' '.join(again)}` runs it again")
    with atomic_path(out) as tmp:
        tmp.write_text(json.dumps({"run": rung["run"], "results": f"results/{rung['run']}", "config": str(config),
                                   "seconds": round(time.monotonic() - t0, 1)}, indent=1))


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


def preflight(workflow, config: dict, argv: list[str]) -> Preflight:
    """Every check before any job, called once from workflow/rules/common.smk: ``config``
    validated in place (a --configfile over its base, --config overrides typed as YAML, each
    file read strictly), the targets, the run's folders, server.ram's cgroup, the user's files,
    the space estimate and the system tools (the main process only where a job's re-parse would
    see its siblings' work). PreflightError carries the first line."""
    from ..core.infra import config as cb_config
    from ..core.infra.targets import TargetError
    from ..prepare.own import spec as patch_spec
    main = workflow.is_main_process

    def warn(line):     # an old name mapped by the validation, said once per run
        if main:
            _say(f"warning: {line}")
    try:
        for file in workflow.overwrite_configfiles or ():   # Snakemake lets a repeated key win silently
            cb_config.read_file(file, "--configfile")
        valid = cb_config.validate(cb_config.typed_overrides(
            cb_config.layered(config, Path(workflow.basedir)), dict(workflow.config_settings.config)),
            warn=warn, resolve=lambda c: patch_spec.resolve(c, results=Path("results")))
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
        _space(workflow, config, res, argv)
        _system_tools(workflow, config, argv)
    return out


def _targets(config: dict, main: bool, argv: list[str]) -> None:
    """Targets without a Slurm node, now (a writable directory or nearest existing parent; the
    jobs create them: a dry run creates nothing outside results/; free space is each target's
    first job's, on its node); the run's folders; server.ram's memory cgroup."""
    from ..core.infra import targets as cb_targets
    from ..core.server import memory
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
    from ..core.infra import sources
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
    from ..core.infra import sources
    from ..prepare import spec as prepare_spec
    from ..prepare.own import manifest, patch
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


def _space(workflow, config: dict, res: str, argv: list[str]) -> None:
    """What the run will need on each target (load/estimate.py), printed, and a target with less
    free space refused (targets on a Slurm node: by their jobs there). With --keep-going a too
    small target only warns: its own jobs refuse or fail, the other targets finish."""
    from ..core.infra import targets as cb_targets
    from ..core.infra.targets import TargetError
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
        if not (getattr(workflow.execution_settings, "keep_going", False) or "--keep-going" in argv
                or any(re.fullmatch(r"-[a-zA-Z]*k[a-zA-Z]*", a) for a in argv[1:])):
            raise PreflightError(f"catbench: nothing was started: {e}") from None
        _say(f"warning: {e}")


def _system_tools(workflow, config: dict, argv: list[str]) -> None:
    """The system tools the config's stages use (a target on a Slurm node has the node's, checked
    by its jobs): a missing one would fail the first job that needs it, after the work before it."""
    from ..core.infra.jobs import system
    if any(v.get("node") for v in config["targets"].values()):
        return
    missing = system.missing_packages(config)
    if not missing:
        return
    how = (f"not installed: {' '.join(missing)}; `make run CONFIG=<this config>` installs them as "
           f"root, or: bash workflow/scripts/install-system.sh {' '.join(system.needed_tools(config))}")
    # a dry run (-n, -np, --dry-run) only says so: Snakemake sets it after parsing
    if workflow.dryrun or any(a in ("--dry-run", "--dryrun") or re.fullmatch(r"-[a-zA-Z]*n[a-zA-Z]*", a)
                              for a in argv[1:]):
        _say(f"warning: {how}")
    else:
        raise PreflightError(f"catbench: nothing was started: the stages {', '.join(config['stages'])} need "
                             f"packages {how}")


def add_subcommands(sub) -> None:
    p = sub.add_parser("ladder", help="the rungs' configs of the config's predict section", description=cmd_ladder.__doc__)
    p.add_argument("--config", required=True)
    p.add_argument("--out", help="directory to write <run>-rung<k>.yaml into")
    p.set_defaults(func=guarded(cmd_ladder, (ConfigError, ValueError), "ladder"))
    command(sub, "ladder-rung", ladder_rung, ("--rung", {"type": int}), ("--cores", {"type": int}), "--snakefile",
            "--out")
