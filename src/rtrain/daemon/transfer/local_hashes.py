"""The sha256 of local files, remembered while each file is provably unchanged.

Starting the same code again hashes the same few thousand files again; the daemon remembers
each file's digest with its identity (device, inode, size, mtime and ctime to the
nanosecond) and hashes it again only when any of them moved. A write, a rename over it or
a chmod moves the ctime, which no user can set back. A file changed within RACY seconds of
its hashing is not remembered (git's "racy" entries): a filesystem's clock ticks coarser
than a nanosecond, so a second write in the same tick would leave its identity as it was.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from pathlib import Path

CHUNK = 1024 * 1024
# Files remembered at most (a few MB of memory); the oldest are forgotten first.
REMEMBERED = 200_000
RACY = 2.0

_Identity = tuple[int, int, int, int, int]
_known: OrderedDict[str, tuple[_Identity, str]] = OrderedDict()


def sha256_of(path: Path) -> str:
    """The hex sha256 of the file's bytes now."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_and_size(path: Path) -> tuple[str, int]:
    """The file's sha256 and size, hashing it only when it changed since it was last hashed
    here. The identity is taken before the bytes are read: a change while they are read
    moves it, so the digest is never remembered for the wrong bytes."""
    before = os.stat(path)
    identity = _identity(before)
    key = str(path)
    known = _known.get(key)
    if known is not None and known[0] == identity:
        _known.move_to_end(key)
        return known[1], before.st_size
    digest = sha256_of(path)
    held_still = time.time_ns() - max(before.st_mtime_ns, before.st_ctime_ns) > RACY * 1e9
    if held_still and _identity(os.stat(path)) == identity:
        _known[key] = (identity, digest)
        _known.move_to_end(key)
        while len(_known) > REMEMBERED:
            _known.popitem(last=False)
    return digest, before.st_size


def settled(path: Path) -> bool:
    """True when the file has held still long enough for its digest to be remembered (a
    file changed just now would be hashed twice: ahead of time, then at its use)."""
    st = os.stat(path)
    return time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY * 1e9


def _identity(st: os.stat_result) -> _Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
