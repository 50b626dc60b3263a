"""Where a fetch keeps a file it has not finished: `DIR/.rtrain-partial/` beside the target.

`NAME.KEY.part` holds the bytes at their offsets and `NAME.KEY.json` the byte ranges already
verified, with the far file's state (device, inode, size, mtime) when they were, and how far
each piece that was in flight had landed (not verified: a resumed fetch has the far side hash
those bytes and keeps them only when they agree): a fetch cut by a dropped connection, a
killed daemon or Ctrl-C resumes from them while the far file still is that file, and starts
afresh when it is not. KEY names the far file (host, run
directory, path), so two runs' files of one name do not meet. Whatever is left there when
the same target is fetched again is either resumed or removed; the folder goes once empty.

The daemon is the only writer there (one daemon per user), so one fetch at a time holds a
partial copy: a second fetch of the same file into the same place waits for the first
(`claimed`), then resumes from what it left or starts afresh.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from . import partial_book

FOLDER = ".rtrain-partial"

# The lock of each partial copy in use, by the path of its data; gone with its last user.
_in_use: weakref.WeakValueDictionary[Path, asyncio.Lock] = weakref.WeakValueDictionary()


def _stem(target: Path, source: str) -> Path:
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    return target.parent / FOLDER / f"{target.name}.{key}"


def _host(source: str) -> str:
    """The host of a far file named `HOST:PATH`."""
    return source.partition(":")[0]


def in_use(path: Path) -> bool:
    """Whether a fetch of this daemon is writing `path` of a partial folder now."""
    if path in _streaming:
        return True
    return any(
        lock.locked() and used.parent == path.parent and path.name.startswith(f"{used.name}.")
        for used, lock in list(_in_use.items())
    )


@contextlib.asynccontextmanager
async def claimed(target: Path, source: str) -> AsyncIterator[None]:
    """Hold the partial copy of `target` from `source` for one fetch; others wait."""
    stem = _stem(target, source)
    lock = _in_use.get(stem)
    if lock is None:
        lock = _in_use[stem] = asyncio.Lock()
    async with lock:
        yield


@dataclass
class Partial:
    data: Path
    record: Path
    state: str
    size: int
    verified: dict[int, int] = field(default_factory=dict)  # offset -> length
    # offset of a range in flight -> bytes written there from it on, not verified yet
    landed: dict[int, int] = field(default_factory=dict)

    @classmethod
    def open(cls, target: Path, source: str, state: str, size: int) -> Partial:
        """The partial copy for `target` of far file `source`: its verified pieces kept when
        the far file is in the same state, else a fresh start. Only under `claimed`."""
        partial = cls.named(target, source, state, size)
        partial.data.parent.mkdir(parents=True, exist_ok=True)
        partial_book.remember(_host(source), partial.data.parent)
        try:
            saved = json.loads(partial.record.read_text())
            if saved.get("state") == state and saved.get("size") == size and partial.data.exists():
                partial.verified = {int(o): int(n) for o, n in saved.get("pieces", [])}
                partial.landed = {int(o): int(n) for o, n in saved.get("landed", []) if int(n)}
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        if not partial.worth_keeping:
            partial.data.unlink(missing_ok=True)
        with open(partial.data, "ab"):
            pass  # exists from now on; pieces are written into it at their offsets
        partial.save()
        return partial

    @classmethod
    def named(cls, target: Path, source: str, state: str, size: int) -> Partial:
        """Where the partial copy for `target` of far file `source` lives (nothing opened)."""
        stem = _stem(target, source)
        return cls(
            stem.with_name(f"{stem.name}.part"), stem.with_name(f"{stem.name}.json"), state, size
        )

    @property
    def worth_keeping(self) -> bool:
        """Whether a next fetch could take anything from this copy."""
        return bool(self.verified or self.landed)

    def done(self, offset: int, length: int) -> None:
        self.verified[offset] = length
        self.landed.pop(offset, None)
        self.save()

    def note_landed(self, offset: int, count: int) -> None:
        """`count` bytes from `offset` on are written (and not verified yet)."""
        if count:
            self.landed[offset] = count
            self.save()

    def save(self) -> None:
        text = json.dumps(
            {
                "state": self.state,
                "size": self.size,
                "pieces": sorted(self.verified.items()),
                "landed": sorted(self.landed.items()),
            }
        )
        temporary = self.record.with_suffix(".json.new")
        try:
            temporary.write_text(text)
            os.replace(temporary, self.record)
        except OSError:
            temporary.unlink(missing_ok=True)  # a full disk: leave no half-written note
            raise

    def discard(self) -> None:
        """Remove the partial copy (done, or useless); the folder too once it is empty."""
        self.data.unlink(missing_ok=True)
        self.record.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.data.parent.rmdir()


async def drop_leftover(target: Path, source: str) -> None:
    """Remove the partial copy of `target` from `source`, if a fetch left one: a daemon killed
    after the file was in place and before its partial copy went leaves its record, and a
    later fetch that finds the file home has nothing else to remove it."""
    leftover = Partial.named(target, source, "", -1)
    if not leftover.record.exists():
        return  # the usual case: no claim taken, nothing touched
    async with claimed(target, source):
        leftover.discard()


STREAMED = ".streamed-"
# The copies of this daemon's streams in flight: never swept.
_streaming: set[Path] = set()


def stream_copy(target: Path, source: str) -> Path:
    """Where a file that comes whole in a tree's stream is written until it is verified:
    a copy of this stream's own (two fetches of one tree never share one), beside the
    target's partial copies, which the next fetch into that folder sweeps if a killed
    daemon left it."""
    stem = _stem(target, source)
    stem.parent.mkdir(parents=True, exist_ok=True)
    partial_book.remember(_host(source), stem.parent)
    path = stem.with_name(f"{stem.name}{STREAMED}{secrets.token_hex(4)}")
    _streaming.add(path)
    return path


def drop_stream_copies(paths: list[Path]) -> None:
    """Remove the stream copies `paths` (those moved under their names are gone already),
    and each partial folder they were in once it is empty."""
    for path in paths:
        _streaming.discard(path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    for folder in {path.parent for path in paths}:
        with contextlib.suppress(OSError):
            folder.rmdir()


def sweep_stream_copies(folder: Path) -> None:
    """Remove the stream copies in `folder`'s partial folder that no stream of this daemon
    is writing: what a killed daemon left."""
    partial = folder / FOLDER
    try:
        names = [entry.name for entry in os.scandir(partial)]
    except OSError:
        return
    for name in names:
        path = partial / name
        if STREAMED in name and path not in _streaming:
            with contextlib.suppress(OSError):
                path.unlink()
    with contextlib.suppress(OSError):
        partial.rmdir()
