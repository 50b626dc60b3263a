"""The sha256 of local files, remembered while each file is provably unchanged.

Starting the same code again hashes the same few thousand files again; the daemon remembers
each file's digest with its identity (device, inode, size, mtime and ctime to the
nanosecond) and hashes it again only when any of them moved. A write, a rename over it or
a chmod moves the ctime, which no user can set back. A file changed within RACY seconds of
its hashing is not remembered (git's "racy" entries): a filesystem's clock ticks coarser
than a nanosecond, so a second write in the same tick would leave its identity as it was.

A file sent in pieces has each piece's sha256 taken in the same pass as the whole file's (one
read, not two), and remembered with it: the far side verifies each piece as it writes it,
and because the pieces' digests and the whole one come from the same bytes, a copy whose
every piece verified is the whole file, with no second hash of it there (seal_input.sh).
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

CHUNK = 4 * 1024 * 1024
# Files remembered at most (a few MB of memory); the oldest are forgotten first.
REMEMBERED = 200_000
RACY = 2.0

_Identity = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Digests:
    """A file's sha256 and size, and the sha256 of each of its pieces of `piece` bytes (none
    when it was hashed without pieces)."""

    sha256: str
    size: int
    piece: int = 0
    pieces: tuple[str, ...] = ()


_known: OrderedDict[str, tuple[_Identity, Digests]] = OrderedDict()


def sha256_of(path: Path) -> str:
    """The hex sha256 of the file's bytes now."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_and_size(path: Path) -> tuple[str, int]:
    """The file's sha256 and size, hashing it only when it changed since it was last hashed
    here."""
    found = digests(path)
    return found.sha256, found.size


def digests(path: Path, piece: int = 0) -> Digests:
    """The file's sha256 and size, and with `piece` the sha256 of each piece of that many
    bytes, all from one read; hashed only when the file changed since it was last hashed
    here (or was hashed without those pieces). The identity is taken before the bytes are
    read: a change while they are read moves it, so no digest is remembered for the wrong
    bytes."""
    before = os.stat(path)
    identity = _identity(before)
    key = str(path)
    known = _known.get(key)
    if known is not None and known[0] == identity and (not piece or known[1].piece == piece):
        _known.move_to_end(key)
        return known[1]
    whole, parts = _read_digests(path, piece)
    digest = Digests(whole, before.st_size, piece, parts)
    held_still = time.time_ns() - max(before.st_mtime_ns, before.st_ctime_ns) > RACY * 1e9
    if held_still and _identity(os.stat(path)) == identity:
        _known[key] = (identity, digest)
        _known.move_to_end(key)
        while len(_known) > REMEMBERED:
            _known.popitem(last=False)
    return digest


def _read_digests(path: Path, piece: int) -> tuple[str, tuple[str, ...]]:
    """The whole file's sha256 and, with `piece`, each piece's, reading every byte once."""
    if not piece:
        return sha256_of(path), ()
    assert piece % CHUNK == 0
    whole = hashlib.sha256()
    parts: list[str] = []
    current = hashlib.sha256()
    in_piece = 0
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            whole.update(chunk)
            current.update(chunk)
            in_piece += len(chunk)
            if in_piece >= piece:
                parts.append(current.hexdigest())
                current, in_piece = hashlib.sha256(), 0
    if in_piece or not parts:
        parts.append(current.hexdigest())
    return whole.hexdigest(), tuple(parts)


def settled(path: Path) -> bool:
    """True when the file has held still long enough for its digest to be remembered (a
    file changed just now would be hashed twice: ahead of time, then at its use)."""
    st = os.stat(path)
    return time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > RACY * 1e9


def _identity(st: os.stat_result) -> _Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
