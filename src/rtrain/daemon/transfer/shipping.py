"""Ship local files and trees into a run directory, through the host's input cache.

    shipped = await ship(transport, workdir, run_dir, [Input(path, "dataset.jsonl"),
                         Input(code_dir, "code"), Input(b"...", "demo_trainer.py")], progress)

Each input (a file, the files of a directory tree under its name, or bytes) is hashed here
first. One far-side script then places every input the host already holds (same sha256 and
size, in `<workdir>/.cache/inputs/`) into the run directory, as a hard link or a copy; only
the others are sent. They go into the cache's partial copy as pieces, side by side on several
channels, each piece verified by its own sha256 as the far side writes it; the whole copy is
then hashed once more, moves into the cache and is placed. A cut upload leaves its verified
pieces, and the next one sends only the others. On a transport without byte streams (the
console) an input goes through `whole_file.upload`, straight into the run directory.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import posixpath
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rtrain.daemon.remote.contract import file_scripts
from rtrain.daemon.remote.error_words import ErrorWord, FarError, far_error, says_disk_full
from rtrain.daemon.transfer import tree_ship, whole_file
from rtrain.daemon.transports.byte_pump import FileRange
from rtrain.daemon.transports.transport import STALL_TIMEOUT, Transport
from rtrain.protocol.errors import Kind, app_error

from .lanes import Lanes, first_error
from .local_hashes import digests, settled
from .plan import PIECE, channels_for, pieces, runs

CHUNK = 1024 * 1024
# Uploads side by side on a transport without streams (the console's chunked uploads).
PLAIN_SIDE_BY_SIDE = 4
# Threads that hash a start's local files.
HASH_SIDE_BY_SIDE = 4
# The far side hashes a whole input again before it enters the cache; allow this many bytes/s.
HASH_RATE = 20e6
# Missing files this small go as text through a long-lived shell (put_small), as long as
# they are at most SMALL_TOTAL bytes in all: a few changed files of a code tree.
SMALL_FILE = 256 * 1024
SMALL_TOTAL = 1024 * 1024
# The largest file that changed just now which a start hashes before its claim anyway (it is
# hashed again when shipped: a digest taken within RACY seconds of a change is not kept).
HASH_TWICE_AT_MOST = 16 * 1024 * 1024


@dataclass(frozen=True)
class Input:
    """What to ship: a local file, a local directory (its regular files, under `name/`), or
    bytes; `name` is its path relative to the run directory."""

    source: Path | bytes
    name: str


@dataclass(frozen=True)
class Shipped:
    """One file as it arrived: `sent` bytes went over the wire (0 when the host had it);
    `how` is `sent`, `linked` or `copied` (the last two: from the host's cache)."""

    name: str
    size: int
    sha256: str
    sent: int
    how: str


@dataclass(frozen=True)
class _File:
    path: Path
    name: str
    size: int
    sha256: str
    # Each piece's sha256, from the same read as `sha256`: a file larger than one piece.
    pieces: tuple[str, ...] = ()


Progress = Callable[[int], None]
# An input as the host's cache is asked for it: (sha256, size, name).
Entry = tuple[str, int, str]


@dataclass(frozen=True)
class Answered:
    """The host's cache placement of a shipment's files, asked for already (a start asks it
    in the far call that claims the run directory, prepare.sh `place`): the entries it
    listed, the answer, and how long that far call took (a round trip, for the lanes)."""

    listed: list[Entry]
    placed: file_scripts.Placed
    round_trip: float


def cache_entries(inputs: Sequence[Input]) -> list[Entry] | None:
    """Each file of `inputs` as the host's cache is asked for it, hashed as `ship` hashes it
    (a local file's digest is remembered, so `ship` does not read it again). None where
    `ship` had better ask itself: a file cannot be read (`ship` says so), or a large one
    changed just now (its digest is not remembered, and a second read would cost more than
    the round trip saved)."""
    entries: list[Entry] = []
    try:
        for source, name in files_of(inputs):
            if isinstance(source, bytes):
                entries.append((hashlib.sha256(source).hexdigest(), len(source), name))
                continue
            size = source.stat().st_size
            if size > HASH_TWICE_AT_MOST and not settled(source):
                return None
            found = digests(source, PIECE if size > PIECE else 0)
            entries.append((found.sha256, found.size, name))
    except OSError:
        return None
    return entries


def files_of(inputs: Sequence[Input]) -> list[tuple[Path | bytes, str]]:
    """Every file the inputs stand for, as (source, name in the run directory)."""
    found: list[tuple[Path | bytes, str]] = []
    for item in inputs:
        if isinstance(item.source, Path) and item.source.is_dir():
            for path in sorted(item.source.rglob("*")):
                if path.is_file():
                    rel = path.relative_to(item.source).as_posix()
                    found.append((path, posixpath.join(item.name, rel)))
        else:
            found.append((item.source, item.name))
    return found


def total_size(inputs: Sequence[Input]) -> int:
    return sum(
        len(source) if isinstance(source, bytes) else source.stat().st_size
        for source, _ in files_of(inputs)
    )


async def ship(
    transport: Transport,
    workdir: str,
    run_dir: str,
    inputs: Sequence[Input],
    progress: Progress | None = None,
    *,
    channels: int | None = None,
    landed: Callable[[Shipped], None] | None = None,
    answered: Answered | None = None,
) -> list[Shipped]:
    """Make every input appear, verified, under its name in `run_dir`; what each cost, in
    input order. `progress` hears of bytes as they go, `landed` of each file in place.
    `answered`: the host's cache was asked already (its answer may list more files)."""
    temporaries: list[Path] = []
    try:
        named = []
        for source, name in files_of(inputs):
            if isinstance(source, bytes):
                path = _bytes_file(source)
                temporaries.append(path)
            else:
                path = source
            named.append((path, name))
        files = await asyncio.to_thread(_hashed, named)
        advance = progress or (lambda _count: None)
        told = landed or (lambda _file: None)
        if not transport.streams:
            return await _ship_plainly(transport, run_dir, files, advance, told)
        shipment = _CacheShipment(transport, workdir, run_dir, advance, told)
        return await shipment.run(files, channels, answered)
    finally:
        for path in temporaries:
            path.unlink(missing_ok=True)


async def _ship_plainly(
    transport: Transport,
    run_dir: str,
    files: list[_File],
    advance: Progress,
    landed: Callable[[Shipped], None],
) -> list[Shipped]:
    shipped: dict[str, Shipped] = {}
    gate = asyncio.Semaphore(PLAIN_SIDE_BY_SIDE)

    async def send(f: _File) -> None:
        async with gate:
            await whole_file.upload(transport, f.path, f"{run_dir}/{f.name}", f.sha256, advance)
        shipped[f.name] = Shipped(f.name, f.size, f.sha256, f.size, "sent")
        landed(shipped[f.name])

    try:
        async with asyncio.TaskGroup() as group:
            for f in files:
                group.create_task(send(f))
    except BaseExceptionGroup as failed:
        raise first_error(failed) from None
    return [shipped[f.name] for f in files]


class _CacheShipment:
    """Inputs shipped through the host's cache: what it holds is placed from there, the
    rest is sent (small files streamed in batches, one of each content), copies of the
    same content are placed from the cache after."""

    def __init__(
        self,
        transport: Transport,
        workdir: str,
        run_dir: str,
        advance: Progress,
        landed: Callable[[Shipped], None],
    ) -> None:
        self.transport = transport
        self.workdir = workdir
        self.run_dir = run_dir
        self.advance = advance
        self.landed = landed
        self.shipped: dict[str, Shipped] = {}
        self.verified: dict[str, set[int]] = {}
        self.lanes = Lanes(1)

    async def run(
        self, files: list[_File], channels: int | None, answered: Answered | None
    ) -> list[Shipped]:
        transport = self.transport
        if answered is not None and _answers(answered, files):
            placed, round_trip = answered.placed, answered.round_trip
        else:
            began = time.monotonic()
            placed = await file_scripts.cache_place(
                transport, self.workdir, self.run_dir, [(f.sha256, f.size, f.name) for f in files]
            )
            round_trip = time.monotonic() - began
        if not placed.ok:
            raise _failure(
                transport, placed.error, placed.error_text, "looking in the host's cache"
            )
        how = placed.placed
        self.verified = placed.pieces
        self.from_cache(how, files)
        streamed, missing, copies = _unplaced(files, how)
        largest = max((f.size for f in missing), default=0)
        streams = tree_ship.batches(streamed)
        lanes = max(channels_for(largest, round_trip, channels), min(len(missing), 4), len(streams))
        self.lanes = Lanes(lanes)
        small = _small(missing, self.verified)
        in_small = {f.name for f in small}
        try:
            async with asyncio.TaskGroup() as group:
                for batch in streams:
                    group.create_task(self.stream(batch))
                if small:
                    group.create_task(self.put_small(small))
                for f in missing:
                    if f.name not in in_small:
                        group.create_task(self.send(f))
        except BaseExceptionGroup as failed:
            raise first_error(failed) from None
        if copies:
            placed_copies = await _place_copies(transport, self.workdir, self.run_dir, copies)
            self.from_cache(placed_copies, copies)
        return [self.shipped[f.name] for f in files]

    def from_cache(self, placed: Mapping[str, str], among: list[_File]) -> None:
        for f in among:
            if f.name in placed:
                self.shipped[f.name] = Shipped(f.name, f.size, f.sha256, 0, placed[f.name])
                self.advance(f.size)
                self.landed(self.shipped[f.name])

    async def send(self, f: _File) -> None:
        self.shipped[f.name] = await _send_file(
            self.transport,
            self.lanes,
            self.workdir,
            self.run_dir,
            f,
            self.verified.get(f.name, set()),
            self.advance,
        )
        self.landed(self.shipped[f.name])

    async def put_small(self, small: list[_File]) -> None:
        """A few small files in one far call through a long-lived shell (one round trip
        where each sent on a channel of its own takes two); as any other where the host
        cannot (no python3)."""
        files = []
        for f in small:
            try:
                data = await asyncio.to_thread(f.path.read_bytes)
            except OSError:
                raise _changed(f) from None  # gone or unreadable since it was hashed
            if len(data) != f.size or hashlib.sha256(data).hexdigest() != f.sha256:
                raise _changed(f)
            files.append((f.sha256, f.name, data))
        done = await file_scripts.put_small(self.transport, self.workdir, self.run_dir, files)
        if done.no_python:
            await asyncio.gather(*(self.send(f) for f in small))
            return
        if done.mismatched:
            raise _changed(next(f for f in small if f.name == done.mismatched[0]))
        if not done.ok or any(f.name not in done.placed for f in small):
            raise _failure(self.transport, done.error, done.error_text, "shipping small files")
        for f in small:
            self.shipped[f.name] = Shipped(f.name, f.size, f.sha256, f.size, "sent")
            self.advance(f.size)
            self.landed(self.shipped[f.name])

    async def stream(self, batch: list[_File]) -> None:
        shipped_now = await self.lanes.run(
            lambda: _stream_batch(self.transport, self.workdir, self.run_dir, batch, self.advance)
        )
        if shipped_now is None:
            # No tar on the host: each file on its own, as any other.
            for f in batch:
                await self.send(f)
            return
        for one in shipped_now:
            self.shipped[one.name] = one
            self.landed(one)


def _small(missing: list[_File], verified: Mapping[str, set[int]]) -> list[_File]:
    """The missing files that go in one far call as text (put_small): small ones with no
    verified piece to resume from, as long as they are few bytes in all."""
    small = [f for f in missing if f.size <= SMALL_FILE and not verified.get(f.name)]
    return small if sum(f.size for f in small) <= SMALL_TOTAL else []


def _answers(answered: Answered, files: list[_File]) -> bool:
    """Whether `answered` speaks of every one of `files`. A file placed under another
    digest than the one taken now changed since it was listed: the run holds its old bytes,
    so the start fails rather than launch them."""
    listed = {name: (sha, size) for sha, size, name in answered.listed}
    if any(f.name not in listed for f in files):
        return False
    for f in files:
        if f.name in answered.placed.placed and listed[f.name] != (f.sha256, f.size):
            raise _changed(f)
    return True


async def _place_copies(
    transport: Transport, workdir: str, run_dir: str, copies: list[_File]
) -> Mapping[str, str]:
    """Files whose content was just sent under another name, placed from the cache."""
    again = await file_scripts.cache_place(
        transport, workdir, run_dir, [(f.sha256, f.size, f.name) for f in copies]
    )
    if not again.ok or any(f.name not in again.placed for f in copies):
        raise _failure(transport, again.error, again.error_text, "placing copies of inputs")
    return again.placed


def _unplaced(
    files: list[_File], placed: Mapping[str, str]
) -> tuple[list[_File], list[_File], list[_File]]:
    """The files the host's cache did not place, by how they go: streamed (many small
    files, in one stream each batch, straight into the run directory), sent (one of each
    content), and copies (the same content as one sent: placed from the cache after)."""
    small = [f for f in files if f.name not in placed and f.size <= tree_ship.MOST_BYTES]
    streamed = small if len(small) >= tree_ship.FEWEST else []
    in_stream = {f.name for f in streamed}
    missing: list[_File] = []
    copies: list[_File] = []
    for f in files:
        if f.name not in placed and f.name not in in_stream:
            (copies if any(m.sha256 == f.sha256 for m in missing) else missing).append(f)
    return streamed, missing, copies


async def _send_file(
    transport: Transport,
    lanes: Lanes,
    workdir: str,
    run_dir: str,
    f: _File,
    verified: set[int],
    advance: Progress,
) -> Shipped:
    cut = pieces(f.size)
    if len(cut) > 1 and len(f.pieces) != len(cut):
        raise _changed(f)  # it grew or shrank while it was hashed
    sending = _FileSend(transport, lanes, workdir, run_dir, f, advance)
    whole = len(cut) == 1
    for offset, length in cut:
        if offset in verified and not whole:
            advance(length)
    todo = [(o, n) for o, n in cut if whole or o not in verified]
    try:
        async with asyncio.TaskGroup() as group:
            for run in runs(todo, lanes.limit):
                group.create_task(sending.put_run(run))
    except BaseExceptionGroup as failed:
        raise first_error(failed) from None
    if not whole:
        await _seal(transport, workdir, run_dir, f)
    return Shipped(f.name, f.size, f.sha256, sending.sent, "sent")


class _FileSend:
    """The pieces of one file going out, a run of consecutive ones per stream."""

    def __init__(
        self,
        transport: Transport,
        lanes: Lanes,
        workdir: str,
        run_dir: str,
        f: _File,
        advance: Progress,
    ) -> None:
        self.transport = transport
        self.lanes = lanes
        self.workdir = workdir
        self.run_dir = run_dir
        self.f = f
        self.advance = advance
        cut = pieces(f.size)
        self.whole = len(cut) == 1
        self.expected = {
            offset: f.sha256 if self.whole else f.pieces[i] for i, (offset, _) in enumerate(cut)
        }
        self.sent = 0
        # Set once the host says it takes one piece per stream (no python3 there).
        self.one_piece_only = False

    async def put_run(self, run: list[tuple[int, int]]) -> None:
        """Consecutive pieces in one stream, each verified and kept on its own there."""
        if len(run) == 1 or self.one_piece_only:
            for offset, length in run:
                await self.put(offset, length)
            return
        f = self.f
        start, total = run[0][0], sum(length for _offset, length in run)
        args = [self.workdir, f.sha256, str(f.size)]
        for offset, length in run:
            args += [str(offset), str(length), self.expected[offset]]
        done = await self.stream(args, start, total)
        if done.error is not None and done.error.word == ErrorWord.ONE_PIECE:
            # No python3 there: a piece per stream (nothing of this one was kept).
            self.one_piece_only = True
            for offset, length in run:
                await self.put(offset, length)
            return
        if done.mismatch:
            raise _changed(f)
        if not done.ok or any(offset not in done.offsets for offset, _length in run):
            raise _failure(self.transport, done.error, done.error_text, f"shipping {f.name}")
        self.sent += total

    async def put(self, offset: int, length: int) -> None:
        f = self.f
        args = [self.workdir, f.sha256, str(f.size), str(offset), str(length)]
        args.append(self.expected[offset])
        if self.whole:
            args += [self.run_dir, f.name]
        done = await self.stream(args, offset, length)
        if done.mismatch:
            raise _changed(f)
        if not done.ok:
            raise _failure(self.transport, done.error, done.error_text, f"shipping {f.name}")
        self.sent += length

    async def stream(self, args: list[str], offset: int, length: int) -> file_scripts.Stored:
        source = FileRange(self.f.path, offset, length)
        return file_scripts.stored(
            await self.lanes.run(
                lambda: self.transport.stream_file_in(
                    "put_range",
                    args,
                    source,
                    self.advance,
                    answer_within=STALL_TIMEOUT + length / HASH_RATE,
                )
            )
        )


async def _seal(transport: Transport, workdir: str, run_dir: str, f: _File) -> None:
    """A file sent in pieces, checked whole on the host and placed in the run directory."""
    sealed = await file_scripts.seal_input(
        transport,
        workdir,
        f.sha256,
        f.size,
        run_dir,
        f.name,
        timeout=STALL_TIMEOUT + f.size / HASH_RATE,
    )
    if sealed.mismatch:
        raise _changed(f)
    if not sealed.ok:
        raise _failure(transport, sealed.error, sealed.error_text, f"shipping {f.name}")


async def _stream_batch(
    transport: Transport, workdir: str, run_dir: str, batch: list[_File], advance: Progress
) -> list[Shipped] | None:
    """Ship `batch` in one stream; what landed, or None when the host has no tar."""
    try:
        done = await tree_ship.ship_stream(transport, workdir, run_dir, list(batch), advance)
    except tree_ship.Changed as changed:
        raise _changed(next(f for f in batch if f.name == changed.name)) from None
    received, mismatched, said = tree_ship.verdict(done)
    error = far_error(said)
    if mismatched:
        raise _changed(next(f for f in batch if f.name == mismatched[0]))
    if error is not None and error.word == ErrorWord.NO_TAR:
        return None
    if not received:
        raise _failure(transport, error, done.error_text, f"shipping {len(batch)} file(s)")
    # A content sent once; the files of the same content are its copies there.
    first: set[str] = set()
    shipped = []
    for f in batch:
        again = f.sha256 in first
        first.add(f.sha256)
        shipped.append(
            Shipped(f.name, f.size, f.sha256, 0 if again else f.size, "copied" if again else "sent")
        )
    return shipped


def _changed(f: _File) -> Exception:
    return app_error(
        Kind.TRANSFER_FAILED,
        f"{f.path} changed while it was shipped (its sha256 is not the one taken before "
        "sending); nothing was kept under its name. Try again once it holds still.",
    )


def _failure(transport: Transport, error: FarError | None, text: str, what: str) -> Exception:
    words = str(error or "") or text
    word = error.word if error is not None else None
    if word == ErrorWord.DISK_FULL or (error is None and says_disk_full(text)):
        return app_error(Kind.DISK_FULL, f"{transport.alias}: the disk is full; {what} failed.")
    if word == ErrorWord.PATH_OUTSIDE_RUN:
        return app_error(Kind.PATH_OUTSIDE_RUN, f"{transport.alias}: {what}: {words}")
    return app_error(Kind.TRANSFER_FAILED, f"{transport.alias}: {what} failed: {words}")


def _hashed(named: list[tuple[Path, str]]) -> list[_File]:
    """Each file with its size and sha256. A few threads share the work (hashlib lets go of
    the GIL while it hashes, so a cold tree hashes on every core), each on a slice of the
    files, not a thread per file (that would cost more than hashing a small file)."""
    if len(named) < HASH_SIDE_BY_SIDE * 8:
        return _hashed_slice(named)
    slices = [named[i::HASH_SIDE_BY_SIDE] for i in range(HASH_SIDE_BY_SIDE)]
    with ThreadPoolExecutor(HASH_SIDE_BY_SIDE) as pool:
        done = list(pool.map(_hashed_slice, slices))
    # Back in input order: slice i holds the files i, i + n, i + 2n...
    return [done[i % HASH_SIDE_BY_SIDE][i // HASH_SIDE_BY_SIDE] for i in range(len(named))]


def _hashed_slice(named: list[tuple[Path, str]]) -> list[_File]:
    files = []
    for path, name in named:
        # One pass takes the whole file's sha256 and, for a file sent in pieces, each piece's.
        found = digests(path, PIECE if path.stat().st_size > PIECE else 0)
        files.append(_File(path, name, found.size, found.sha256, found.pieces))
    return files


def _bytes_file(data: bytes) -> Path:
    fd, name = tempfile.mkstemp(prefix="rtrain-ship-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return Path(name)
