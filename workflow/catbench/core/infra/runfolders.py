"""A run's own folders (``results/<run>``, ``<target>/<run>``): never a symbolic link, and a
ladder rung's folders made by that ladder or refused naming who owns them.

A rung of run X is run ``X-rung<k>``: a user may have a run of that name already, and anyone
who can write ``results/`` or a shared target directory may have planted a link there. A
rung's folders therefore carry a marker (:data:`MARKER`) naming the ladder that made them;
a folder without it, or with another ladder's, is never written by the rung, and a user's
run is refused where a ladder's marker says the folder is a rung."""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path

import psutil

from .config import target_dir
from .config.yamlfile import YamlFileError, read_bytes
from .errors import TargetError

MARKER = ".catbench-rung.json"
MARKER_BYTES = 4096


def run_folders(cfg: dict, results: Path = Path("results")) -> list[tuple[str, Path]]:
    """(the config key it follows from, folder) of every folder the run writes on this host;
    a target on a Slurm node is checked by its jobs there."""
    out = [("run", Path(results) / cfg["run"])]
    out += [(f"targets.{t}.path", target_dir(cfg, t)) for t, v in cfg["targets"].items() if not v.get("node")]
    return out


def owner(folder: Path) -> dict | None:
    """The ladder that made ``folder`` ({"ladder": run, "rung": k}), None where no marker says so."""
    marker = folder / MARKER
    if not marker.exists() and not marker.is_symlink():
        return None
    if marker.is_symlink():
        raise TargetError(f"{marker} is a symbolic link; catbench never reads its markers through one: remove it")
    try:
        doc = json.loads(read_bytes(marker, "a rung's marker", MARKER_BYTES, "a marker catbench wrote"))
    except (YamlFileError, ValueError) as e:
        raise TargetError(f"{marker} is not a rung marker catbench wrote ({e}); remove it if you did not "
                          f"make it") from None
    if not (isinstance(doc, dict) and isinstance(doc.get("ladder"), str) and isinstance(doc.get("rung"), int)):
        raise TargetError(f"{marker} is not a rung marker catbench wrote; remove it if you did not make it")
    return {"ladder": doc["ladder"], "rung": doc["rung"]}


def _not_a_link(key: str, folder: Path) -> None:
    if folder.is_symlink():
        raise TargetError(f"{folder} (the run's folder, config key '{key}') is a symbolic link (to "
                          f"{os.readlink(folder)}); catbench never writes a run through one: remove it if you "
                          f"did not make it")
    if folder.exists() and not folder.is_dir():
        raise TargetError(f"{folder} (the run's folder, config key '{key}') is not a directory; move it away")


def check_run(cfg: dict, results: Path = Path("results")) -> None:
    """Before any job: no folder of the run is a link, and a run that is not a rung does not
    write into a ladder's rung (TargetError naming the folder and its ladder)."""
    rung = (cfg.get("predict") or {}).get("rung")
    for key, folder in run_folders(cfg, results):
        _not_a_link(key, folder)
        made = owner(folder) if folder.is_dir() else None
        if made and rung is None:
            raise TargetError(f"{folder} holds rung {made['rung']} of run {made['ladder']!r}'s ladder, not a run "
                              f"of its own: give this run another name (config key 'run')")


def claim_rung(cfg: dict, ladder: str, rung: int, results: Path = Path("results")) -> None:
    """Rung ``rung`` of run ``ladder``'s folders: made now with their marker, or made by this
    ladder's rung before (a resumed rung); any other folder there is refused, never written."""
    want = {"ladder": ladder, "rung": rung}
    for key, folder in run_folders(cfg, results):
        _not_a_link(key, folder)
        if folder.exists():
            made = owner(folder)
            if made != want:
                who = (f"rung {made['rung']} of run {made['ladder']!r}'s ladder" if made
                       else "not made by a ladder (a run of that name, or files put there)")
                raise TargetError(f"{folder} exists and is {who}: rung {rung} of run {ladder!r} would rewrite "
                                  f"it. Rename or move that folder, or give this run another name (config key "
                                  f"'run')")
            continue
        folder.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(folder)     # never through a link planted since the check: EEXIST then
        except FileExistsError:
            raise TargetError(f"{folder} appeared while rung {rung} of run {ladder!r} made it; run it "
                              f"again") from None
        _write_marker(folder / MARKER, want)


def _write_marker(path: Path, doc: dict) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as e:
        if e.errno in (errno.EEXIST, errno.ELOOP):
            raise TargetError(f"{path} appeared while the rung made its folder; run it again") from None
        raise
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)


RUN_LOCK = Path(".snakemake") / "catbench-run.lock"   # held by `make run` (workflow/scripts/one_run.py)


def check_unlock(workdir: Path) -> None:
    """``snakemake --unlock`` in a checkout whose run is live (its run lock held by a process that
    is not this one's parent: `make run` unlocks a stale lock itself) is refused, naming the run."""
    path = Path(workdir) / RUN_LOCK
    if not path.is_file() or path.is_symlink():
        return
    with open(path, "rb") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return                                  # nobody holds it: no run is live
        except BlockingIOError:
            holder = f.read(32).decode(errors="replace").strip()
    mine = {p.pid for p in psutil.Process().parents()}
    if holder.isdigit() and int(holder) in mine:
        return
    raise TargetError(f"a run of {Path(workdir).resolve()} is live (it holds {path}, pid {holder or 'unknown'}): "
                      f"--unlock now would let a second run write its folders; wait for it or stop it")
