"""Who owns a target's folders: a folder another user owns is one where that user can plant a
symlink that a root job would then write through."""

from __future__ import annotations

import os
import pwd
from pathlib import Path


def foreign_owner(path) -> tuple[Path, int] | None:
    """(folder, its owner's uid): the nearest existing folder of ``path`` (itself or a parent)
    that is owned neither by this user nor by root, where another user could plant a symlink
    that a root job would write through; None when there is none."""
    me = os.geteuid()
    for p in [Path(path).absolute(), *Path(path).absolute().parents]:
        try:
            uid = p.lstat().st_uid
        except OSError:
            continue
        if uid not in (me, 0):
            return p, uid
    return None


def user_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"
