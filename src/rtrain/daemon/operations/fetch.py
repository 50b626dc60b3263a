"""run/fetch: bring files of a run home, each checked against the far side's sha256.

The listing gives names and sizes only. A file already at its target with the same size and
sha256 is not sent again (unless `force`). The small files of a tree come in a few streams,
each file verified on its own (daemon/transfer/tree_fetch.py); each other file comes through
the transfer engine (daemon/transfer/fetching.py): in one stream hashed by the far side as
it is sent, or in verified pieces over several channels, resumable. Nothing is under its
final name before it is whole and verified, so an interrupted, damaged or changing fetch
never leaves a truncated file there.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import glob
import posixpath
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import msgspec

from rtrain.daemon.local_disk import refused
from rtrain.daemon.remote.contract import file_scripts
from rtrain.daemon.remote.contract.answers import Exit
from rtrain.daemon.remote.error_words import ErrorWord
from rtrain.daemon.transfer.fetching import fetch_file
from rtrain.daemon.transfer.lanes import Lanes, first_error
from rtrain.daemon.transfer.local_hashes import sha256_of
from rtrain.daemon.transfer.partial import drop_leftover
from rtrain.daemon.transfer.plan import PIECE, channels_for
from rtrain.daemon.transfer.tree_fetch import TreeFile, WriteFailed, fetch_streamed
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import FetchedFile, FetchParams, FetchResult, byte_progress

from .context import DaemonState
from .notifier import Notifier
from .run_nodes import node_workdir, run_node
from .run_proof import refuse_unless_run

# Files of a tree in flight at once (each on a channel of its own).
FILES_AT_ONCE = 4


async def fetch(ops: DaemonState, p: FetchParams, ctx: Notifier) -> FetchResult:
    if p.node is not None:
        # A run across hosts: node K's host and run dir, as if the run were recorded there.
        node = run_node(ops, p.host, p.run_id, p.node)
        p = msgspec.structs.replace(p, host=node.host, workdir=node_workdir(node), node=None)
    run_dir = ops.run_dir(p.host, p.run_id, p.workdir)
    rel = validation.fetch_path(p.path)
    dest = Path(p.dest).expanduser()
    # The daemon's own directory is not the client's: a relative destination would land
    # wherever the daemon happens to run (`/`), so a client sends an absolute one.
    if not dest.is_absolute():
        raise app_error(
            Kind.INVALID_PATH,
            f"The destination {p.dest} is relative: send an absolute path "
            "(rtrain's CLI and Python API resolve it against your directory).",
        )
    if dest.exists() and not dest.is_dir():
        raise app_error(Kind.INVALID_PATH, f"{p.dest} exists and is not a directory.")
    # Before any ssh: a destination that cannot be made is known at once. A fetch that then
    # fails leaves no empty directory of its own making behind.
    made = [d for d in (dest, *dest.parents) if not d.exists()]
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise refused(error, f"create the directory {dest} to fetch into") from None
    try:
        return await _fetch_into(ops, p, ctx, run_dir, rel, dest)
    except BaseException:
        for directory in made:  # deepest first; only while empty
            with contextlib.suppress(OSError):
                directory.rmdir()
        raise


@dataclass(frozen=True)
class _Asked:
    """What one fetch asks for: the run's directory, the path in it, and where it lands."""

    p: FetchParams
    run_dir: str
    rel: str
    dest: Path


async def _fetch_into(
    ops: DaemonState, p: FetchParams, ctx: Notifier, run_dir: str, rel: str, dest: Path
) -> FetchResult:
    transport = await ops.transport(p.host)
    # The host's guard counts it busy while the files move.
    async with ops.leases.hold(p.host, transport, posixpath.dirname(run_dir)):
        return await _fetch_listed(ops, _Asked(p, run_dir, rel, dest), ctx, transport)


async def _fetch_listed(
    ops: DaemonState, asked: _Asked, ctx: Notifier, transport: Transport
) -> FetchResult:
    p, run_dir, rel, dest = asked.p, asked.run_dir, asked.rel, asked.dest
    # No hashes in the listing: send.sh hashes each file as it sends it.
    began = time.monotonic()
    listing = await file_scripts.list_files(transport, run_dir, rel, hashed=False)
    round_trip = time.monotonic() - began
    refuse_unless_run(listing, p.host, p.run_id, run_dir, "nothing was fetched")
    _refuse_failed_listing(listing, asked)
    files = [(listed.size, listed.path) for listed in listing.files]
    # The fetched path lands in dest under its own last component: `a/b` -> dest/b/...
    parent = posixpath.dirname(rel) if rel != "." else ""
    landing = _Landing(dest, parent)
    targets = {path: landing.target(path) for _size, path in files}
    skip: dict[str, str] = (
        {} if p.force else await _already_home(transport, run_dir, rel, files, targets)
    )
    progress = _Progress(p, ctx, rel, total=sum(size for size, _ in files))
    progress.report("begin")
    for directory in listing.dirs:
        landing.resolved(directory).mkdir(parents=True, exist_ok=True)
    batch = _Batch(transport, run_dir, p.host, files, targets, skip, progress)
    channels = ops.hosts.config.host(p.host).channels
    await batch.run(channels_for(batch.wanted(), round_trip, channels))
    progress.report(
        "end",
        f"{len(batch.fetched)} file(s), {progress.total} bytes verified"
        + (f", {len(skip)} already here" if skip else ""),
    )
    return FetchResult(
        files=[batch.fetched[path] for _size, path in files],
        total_bytes=progress.total,
        skipped=len(skip),
        sent_bytes=batch.sent,
    )


def _refuse_failed_listing(listing: file_scripts.Listing, asked: _Asked) -> None:
    """The sentence for a listing that names no files to fetch."""
    p, run_dir, rel = asked.p, asked.run_dir, asked.rel
    if listing.error is not None:
        kind, named = listing.error.word, listing.error.arg
        if kind == ErrorWord.PATH_OUTSIDE_RUN:
            raise app_error(
                Kind.PATH_OUTSIDE_RUN,
                f"{named or rel!r} points outside the run "
                "directory (a symlink?); rtrain fetches only the run's own files.",
            )
        if kind == ErrorWord.NOT_FOUND:
            raise app_error(
                Kind.REMOTE_FILE_MISSING, f"{rel} does not exist in run {p.run_id} on {p.host}."
            )
        if kind in (ErrorWord.RUN_NOT_FOUND, ErrorWord.NO_RUN_DIR):
            raise app_error(
                Kind.RUN_NOT_FOUND,
                f"no run {p.run_id} on {p.host} (looked in {run_dir}); check the run id, or "
                "pass --workdir if it was started with another one.",
            )
        if kind == ErrorWord.BAD_NAME:
            raise app_error(
                Kind.INVALID_PATH,
                f"{named or rel!r} has a tab or a newline in its name; rtrain cannot fetch it.",
            )
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: cannot fetch {rel}: {listing.error}")
    if listing.exit != Exit.OK:
        raise app_error(Kind.REMOTE_FAILED, f"{p.host}: listing {rel} failed: {listing.error_text}")


@dataclass
class _Progress:
    """The bytes of a fetch so far, told as `$/progress` when the client asked for it."""

    p: FetchParams
    ctx: Notifier
    rel: str
    total: int
    done: int = 0
    last: float = 0.0

    def report(self, kind: Literal["begin", "report", "end"], message: str | None = None) -> None:
        if self.p.progress_token is not None:
            title = f"Fetching {self.rel} from {self.p.host}"
            progress = byte_progress(
                self.p.progress_token, kind, title, self.done, self.total, message
            )
            self.ctx.notify("$/progress", progress)

    def advance(self, count: int) -> None:
        self.done += count
        if time.monotonic() - self.last > 0.1:
            self.last = time.monotonic()
            self.report("report")


@dataclass
class _Batch:
    """The listed files of one fetch on their way home: which come in streams, which alone."""

    transport: Transport
    run_dir: str
    host: str
    files: list[tuple[int, str]]
    targets: dict[str, Path]
    skip: dict[str, str]
    progress: _Progress
    fetched: dict[str, FetchedFile] = field(default_factory=dict)
    sent: int = 0
    streamed: list[TreeFile] = field(init=False)

    def __post_init__(self) -> None:
        # Small files of a tree come in a few streams (tree_fetch.py); large ones striped, one
        # by one. A transport without streams (the console) takes each file on its own.
        self.streamed = [
            TreeFile(path, size, self.targets[path], self._source(path))
            for size, path in self.files
            if path not in self.skip and size <= PIECE
        ]
        if not self.transport.streams or len(self.streamed) < 2:
            self.streamed = []

    def _source(self, path: str) -> str:
        return f"{self.host}:{self.run_dir}/{path}"

    def wanted(self) -> int:
        """The bytes that decide how many channels the fetch opens."""
        largest = max((size for size, path in self.files if path not in self.skip), default=0)
        return max(largest, sum(f.size for f in self.streamed))

    async def run(self, channels: int) -> None:
        lanes = Lanes(channels)
        # Several small files at once, so a tree is not a round trip per file after another.
        side_by_side = asyncio.Semaphore(max(lanes.limit, FILES_AT_ONCE))
        in_stream = {f.path for f in self.streamed}
        try:
            async with asyncio.TaskGroup() as group:
                if self.streamed:
                    group.create_task(self._tree(group, lanes, side_by_side))
                for size, path in self.files:
                    if path not in in_stream:
                        group.create_task(self._one(size, path, lanes, side_by_side))
        except BaseExceptionGroup as failed:
            # The first failure stopped the others; it is the one to tell, as for one file.
            raise first_error(failed) from None

    async def _one(
        self, size: int, path: str, lanes: Lanes, side_by_side: asyncio.Semaphore
    ) -> None:
        target = self.targets[path]
        if path in self.skip:
            self.progress.advance(size)
            sha = self.skip[path]
            with contextlib.suppress(OSError):
                await drop_leftover(target, self._source(path))
        else:
            async with side_by_side:
                target.parent.mkdir(parents=True, exist_ok=True)
                _sweep_old_temporaries(target)
                try:
                    sha, count = await fetch_file(
                        self.transport, lanes, self.run_dir, path, size, target,
                        self.progress.advance, self._source(path),
                    )  # fmt: skip
                except OSError as error:
                    raise _local_failure(target, error) from None
                self.sent += count
        self._landed(path, sha, size)

    def _landed(self, path: str, sha: str, size: int) -> None:
        self.fetched[path] = FetchedFile(
            remote_path=path, local_path=str(self.targets[path]), size=size, sha256=sha,
            verified=True,
        )  # fmt: skip

    async def _tree(
        self, group: asyncio.TaskGroup, lanes: Lanes, side_by_side: asyncio.Semaphore
    ) -> None:
        try:
            came = await fetch_streamed(
                self.transport, lanes, self.run_dir, self.streamed, self.progress.advance
            )
        except WriteFailed as failed:
            raise _local_failure(failed.target, failed.error) from None
        self.sent += came.sent
        sizes = {path: size for size, path in self.files}
        for path, sha in came.landed.items():
            self._landed(path, sha, sizes[path])
        # What the stream did not vouch for comes again on its own (and is refused there if
        # it keeps changing).
        for f in came.left:
            group.create_task(self._one(f.size, f.path, lanes, side_by_side))


async def _already_home(
    transport: Transport,
    run_dir: str,
    rel: str,
    files: list[tuple[int, str]],
    targets: dict[str, Path],
) -> dict[str, str]:
    """The files already at their targets with the same size and sha256: path -> sha256.
    Only when some target has the listed size are the far files hashed (one script)."""
    candidates = {
        path
        for size, path in files
        if targets[path].is_file() and targets[path].stat().st_size == size
    }
    if not candidates:
        return {}
    listing = await file_scripts.list_files(transport, run_dir, rel, hashed=True)
    far = {listed.path: listed.sha256 for listed in listing.files if listed.sha256}
    same = {}
    for path in candidates:
        if path in far and await asyncio.to_thread(sha256_of, targets[path]) == far[path]:
            same[path] = far[path]
    return same


def _local_failure(target: Path, error: OSError) -> Exception:
    """The sentence for a failure of the local disk while writing `target`."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return app_error(
            Kind.DISK_FULL,
            f"the local disk is full: {target.parent} has no room for {target.name}; nothing "
            "was written under its name. Free some space and fetch again.",
        )
    return refused(error, f"write {target} (nothing was written under its name)")


def _sweep_old_temporaries(target: Path) -> None:
    """What fetches of this target by older versions left when killed: `.NAME.rtrain-XXXX`."""
    for old in target.parent.glob(f".{glob.escape(target.name)}.rtrain-*"):
        with contextlib.suppress(OSError):
            old.unlink()


class _Landing:
    """Where each fetched path lands: under `dest`, never outside it (a far name with `..`,
    a local folder that is a link). Each folder is resolved once, not each file's path: for
    a tree of 3,000 files that was 0.3 s of the fetch."""

    def __init__(self, dest: Path, parent: str) -> None:
        self.asked = dest
        self.dest = dest.resolve()
        self.parent = parent
        self._folders: dict[str, Path] = {}

    def target(self, remote_rel: str) -> Path:
        folder, name = posixpath.split(self._inner(remote_rel))
        if name in ("", ".", ".."):
            return self.resolved(remote_rel)
        found = self._folders.get(folder)
        if found is None:
            found = self._folders[folder] = self._inside((self.dest / folder).resolve(), remote_rel)
        # A plain name inside a folder inside dest: it stays there (os.replace puts the file
        # in place of a link of that name; it never follows one).
        return found / name

    def resolved(self, remote_rel: str) -> Path:
        return self._inside((self.dest / self._inner(remote_rel)).resolve(), remote_rel)

    def _inner(self, remote_rel: str) -> str:
        return posixpath.relpath(remote_rel, self.parent) if self.parent else remote_rel

    def _inside(self, target: Path, remote_rel: str) -> Path:
        if not target.is_relative_to(self.dest):
            raise app_error(
                Kind.PATH_OUTSIDE_RUN, f"{remote_rel!r} would land outside {self.asked}."
            )
        return target
