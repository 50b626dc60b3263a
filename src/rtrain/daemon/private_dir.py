"""Directories only this user may enter: created 0700, then verified rather than trusted."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnsafeDirectory(Exception):
    """A directory rtrain would put secrets-adjacent files in is not private to this user."""


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) if needed; refuse unless it is ours and mode 0700."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory (a symlink?); remove it and retry.")
    if info.st_uid != os.getuid():
        raise UnsafeDirectory(
            f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()}); "
            "another user may be intercepting rtrain. Remove it or set XDG_RUNTIME_DIR."
        )
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise UnsafeDirectory(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}; it must be 0700 so other users "
            f"cannot reach rtrain's socket. Run `chmod 700 {path}` and retry."
        )
    return path
