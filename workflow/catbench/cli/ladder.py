"""CLI sub-commands ``catbench ladder`` (the rungs' configs of a config's ladder, predict.rows) and
``catbench ladder-rung`` (one rung of the run's own ladder, stage ``predict``, predict/spec.py InRun:
its config written beside the marker, then Snakemake on it, its loads alone, while this job holds
the run's measuring slot)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import yaml

from ..core.infra.config import ConfigError
from ..core.infra.config import validate as validate_config
from ..core.infra.files import atomic_path
from ..core.infra.runfolders import claim_rung
from ..predict.spec import Rung, rung_config, rungs
from .common import command, guarded, out_path, read_config

COMMANDS = ("ladder", "ladder-rung")


def cmd_ladder(args) -> int:
    """The rungs of the config's ladder (predict.rows): one config file per rung in --out,
    named by its run (``<run>-rung<k>``); without --out, their names and scaled settings."""
    out_path(args.out, directory=True)
    ladder = [Rung.of(r) for r in rungs(read_config(args.config))]
    for r in ladder:    # each rung's file must be a config the workflow takes
        try:
            validate_config(r.file)
        except ConfigError as e:
            raise ConfigError(f"the rung {r.run!r} of {args.config} would be refused by the workflow "
                              f"(its run is config key 'run' + '-rung<k>'): {e}") from None
    if args.out:
        _only_this_ladder(Path(args.out), {f"{r.run}.yaml" for r in ladder})
    for r in ladder:
        print(f"{r.run}: catalog.patch.objects {r.objects}, partition.index_files {r.index_files}, load.settings "
              f"{json.dumps(r.settings)}, sort_memory {r.sort_memory}, time_limit_s {r.time_limit_s}")
        if args.out:
            (Path(args.out) / f"{r.run}.yaml").write_text(yaml.safe_dump(r.file, sort_keys=False))
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


def add_subcommands(sub) -> None:
    p = sub.add_parser("ladder", help="the rungs' configs of the config's predict section", description=cmd_ladder.__doc__)
    p.add_argument("--config", required=True)
    p.add_argument("--out", help="directory to write <run>-rung<k>.yaml into")
    p.set_defaults(func=guarded(cmd_ladder, (ConfigError, ValueError), "ladder"))
    command(sub, "ladder-rung", ladder_rung, ("--rung", {"type": int}), ("--cores", {"type": int}), "--snakefile",
            "--out")
