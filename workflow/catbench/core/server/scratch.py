"""catbench's own folders inside a folder other users may write to (``targets.<t>.tmpdir``:
a 0777 scratch, ``/tmp``): each made fresh under a random name (``mkdtemp``: created, never
found, 0700), so no other user can plant a link under a name catbench will use and no two
jobs sharing the folder meet in it. A folder is used by its path, so before every use and
before its removal it must still be the folder made then (not a link, ours, same inode):
otherwise it is left alone and the job fails naming it."""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from ..infra.settings import ServerError

log = logging.getLogger(__name__)


class ScratchDir:
    """A fresh private folder ``<parent>/<prefix><random>``; ``path`` checks it is still the
    same one, ``remove()`` removes it only then (never through a link). ``key``: the config key
    that chose ``parent``, for the message."""

    def __init__(self, parent, prefix: str, key: str = "targets.<target>.tmpdir"):
        self.key = key
        parent = Path(parent).absolute()
        parent.mkdir(parents=True, exist_ok=True)
        self._path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        st = os.lstat(self._path)
        self._ident = (st.st_dev, st.st_ino)

    @property
    def path(self) -> Path:
        why = self._changed()
        if why:
            raise ServerError(f"{self._path}, the folder catbench made for this job's temporary files, {why} "
                              f"since; another user can write to {self._path.parent}: give config key "
                              f"'{self.key}' a folder only you can write to")
        return self._path

    def _changed(self) -> str | None:
        try:
            st = os.lstat(self._path)
        except FileNotFoundError:
            return "was removed"
        if stat.S_ISLNK(st.st_mode):
            return "was replaced by a symbolic link"
        if (st.st_dev, st.st_ino) != self._ident or st.st_uid != os.geteuid() or not stat.S_ISDIR(st.st_mode):
            return "was replaced by another file"
        return None

    def remove(self) -> None:
        why = self._changed()
        if why is None:
            shutil.rmtree(self._path, ignore_errors=True)  # fd-based: no link inside is followed
        elif why != "was removed":
            log.warning("%s %s: it was left as it is", self._path, why)


def own_folder(path: Path, key: str, make: bool = True) -> None:
    """``path`` (made first where ``make``) must be a real folder of this user: a name in a folder
    others can write to (a target at ``/tmp``) may be another user's link or folder, which
    catbench neither enters, changes nor removes. ServerError naming ``key`` otherwise."""
    if make:
        path.mkdir(parents=True, exist_ok=True)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    what = ("a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a folder" if not stat.S_ISDIR(st.st_mode)
            else "another user's folder" if st.st_uid != os.geteuid() else None)
    if what:
        raise ServerError(f"{path} is {what}, not the folder catbench makes there; it was left as it is "
                          f"(another user can write to {path.parent}?): give config key '{key}' a folder only you "
                          f"can write to, or remove {path}")


def remove_left(config_file: Path, parent, prefix: str) -> str | None:
    """The temporary folder a killed earlier server of this directory left in ``parent``: the
    ``tmpdir=`` its ``my.cnf`` names, removed when it is ours (a real folder of this user whose
    name catbench gave it); returns what was done, for the log."""
    try:
        lines = config_file.read_text().splitlines()
    except OSError:
        return None
    named = [ln.split("=", 1)[1] for ln in lines if ln.startswith("tmpdir=")]
    if not named:
        return None
    old = Path(named[0])
    if old.parent != Path(parent).absolute() or not old.name.startswith(prefix):
        return None
    try:
        st = os.lstat(old)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():  # a link is no S_ISDIR under lstat
        return None
    shutil.rmtree(old, ignore_errors=True)
    return f"removed the temporary folder {old} of an earlier server of this directory"
