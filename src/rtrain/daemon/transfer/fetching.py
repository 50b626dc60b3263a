"""Bring one far file home: striped over several channels, resumable, verified end to end.

The far side first names the file's state (device, inode, size, mtime). Its pieces then come
side by side, each on a channel of its own (send_range.sh), each hashed by the far side as it
leaves and here as it lands, and each only while the file is still in that state; a verified
piece is recorded in the partial copy (partial.py), so a cut fetch resumes from it. Of a piece
that was in flight, the copy notes how far it landed; the next fetch has the far side hash
those bytes (hash_ranges.sh, with the same state check) and keeps them when the hashes agree,
so a cut costs little more than what was in flight when it came. Every byte is thus vouched
for by the far side while the file was in one state, so the whole file is not hashed there
again; here it is hashed in order as the pieces join up, and that sha256 is the answer. On a
transport without byte streams (the console) the file comes through `whole_file.download`,
with the same temporary place.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from rtrain.daemon.remote.contract import answers, file_scripts
from rtrain.daemon.remote.error_words import ErrorWord, FarError
from rtrain.daemon.transfer import whole_file
from rtrain.daemon.transports.byte_pump import Pump
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, app_error

from .failed_transfers import Unverified, fetch_unverified
from .lanes import Lanes, first_error
from .partial import Partial, claimed
from .plan import LANDED_STEP, PIECE, fetch_pieces, missing

Progress = Callable[[int], None]
# The far side hashes what a cut fetch landed before it is kept; allow it this many bytes/s.
HASH_RATE = 20e6
HASH_BLOCK = 1024 * 1024
# Landed bytes go to the page cache in writes of at most this much. A write of a whole MiB
# makes the kernel cache it in large folios, and on a virtual machine that hands its free
# memory back to the host (virtio-balloon's free page reporting) those come from the blocks
# the host has taken back, each of whose pages faults on first touch: a 1 GB fetch spent
# 5-6 s of the daemon's CPU in its writes, against 0.7 s in writes of 64 KiB (scp's are
# smaller still).
WRITE_STEP = 64 * 1024


async def fetch_file(
    transport: Transport,
    lanes: Lanes,
    run_dir: str,
    rel: str,
    listed: int,
    target: Path,
    progress: Progress,
    source: str,
) -> tuple[str, int]:
    """Write far file `run_dir/rel` (`listed` bytes long when it was listed) to `target` once
    it is whole and verified; (its sha256, bytes sent). `source` names the far file for the
    partial copy (host and path). A file of one piece comes in one stream, as it always did."""
    async with claimed(target, source):
        if not transport.streams or listed <= PIECE:
            return await lanes.run(
                lambda: _fetch_plainly(transport, run_dir, rel, listed, target, progress, source)
            )
        return await _fetch_striped(transport, lanes, run_dir, rel, target, progress, source)


async def _fetch_striped(
    transport: Transport,
    lanes: Lanes,
    run_dir: str,
    rel: str,
    target: Path,
    progress: Progress,
    source: str,
) -> tuple[str, int]:
    stated = await file_scripts.file_state(transport, run_dir, rel)
    if stated.exit != answers.Exit.OK or stated.size is None or stated.state is None:
        raise _failed(transport, rel, stated.error, stated.error_text)
    size, state = stated.size, stated.state
    partial = Partial.open(target, source, state, size)
    try:
        sha, sent = await _fetch_pieces(transport, lanes, run_dir, rel, partial, progress)
    except BaseException as error:
        # The local disk failed (free what the copy took), the bytes are not the far file's,
        # or no piece arrived whole: nothing to resume from. Otherwise (a cut, a cancel) the
        # verified pieces stay for the next fetch.
        if isinstance(error, (OSError, Unverified)) or not partial.worth_keeping:
            partial.discard()
        raise
    os.replace(partial.data, target)
    partial.discard()
    return sha, sent


async def _fetch_pieces(
    transport: Transport,
    lanes: Lanes,
    run_dir: str,
    rel: str,
    partial: Partial,
    progress: Progress,
) -> tuple[str, int]:
    return await _PieceFetch(transport, lanes, run_dir, rel, partial, progress).run()


class _PieceFetch:
    """One file fetched as pieces side by side, each verified on arrival: the byte ranges
    verified by an earlier fetch are kept, and so are the bytes it landed of a piece once the
    far side's hash of them agrees; only the rest is fetched."""

    def __init__(
        self,
        transport: Transport,
        lanes: Lanes,
        run_dir: str,
        rel: str,
        partial: Partial,
        progress: Progress,
    ) -> None:
        self.transport = transport
        self.lanes = lanes
        self.run_dir = run_dir
        self.rel = rel
        self.partial = partial
        self.progress = progress
        self.sent = 0
        # One writer into the file at a time: the kernel takes the file's lock for each write
        # anyway, and a thread waiting on it there spins, taking a core from ssh and hashing.
        self.writing = threading.Lock()

    async def run(self) -> tuple[str, int]:
        partial = self.partial
        await self.keep_what_landed()
        todo = missing(fetch_pieces(partial.size), partial.verified)
        self.progress(partial.size - sum(length for _offset, length in todo))
        whole = _InOrderHash(partial.data)
        whole.advance(_joined(partial.verified))
        # A thread of its own, not the loop's shared pool: it waits out the whole fetch.
        hashing = Pump(f"whole sha256 {self.rel}")
        hashing.start(whole.work)
        try:
            with open(partial.data, "r+b") as sink:
                try:
                    async with asyncio.TaskGroup() as group:
                        for offset, length in todo:
                            group.create_task(self.get(sink.fileno(), offset, length, whole))
                except BaseExceptionGroup as failed:
                    raise first_error(failed) from None
            if os.stat(partial.data).st_size != partial.size:
                raise fetch_unverified(self.rel)
            whole.advance(partial.size)
            whole.finish()
            await asyncio.shield(hashing.done)
        finally:
            whole.stop()
            # The thread ends at once once stopped; its own error, if any, is not the news.
            await asyncio.wait({hashing.done})
            if not hashing.done.cancelled():
                hashing.done.exception()
        return whole.digest.hexdigest(), self.sent

    async def keep_what_landed(self) -> None:
        """Keep the bytes an earlier fetch landed of its pieces in flight that the far file
        still holds: each range is hashed here and there, and kept only when they agree."""
        partial = self.partial
        ranges = sorted(partial.landed.items())
        if not ranges:
            return
        partial.landed.clear()
        mine = await asyncio.to_thread(_range_hashes, partial.data, ranges)
        size = sum(length for _offset, length in ranges)
        far = await self.lanes.run(
            lambda: file_scripts.hash_ranges(
                self.transport, self.run_dir, self.rel, partial.state, ranges,
                timeout=60 + size / HASH_RATE,
            )
        )  # fmt: skip
        if far.changed:
            raise fetch_unverified(self.rel)
        if far.exit != answers.Exit.OK:
            raise _failed(self.transport, self.rel, far.error, far.error_text)
        for (offset, length), sha in zip(ranges, mine, strict=True):
            if far.sha256.get((offset, length)) == sha:
                partial.verified[offset] = length
        partial.save()

    async def get(self, sink: int, offset: int, length: int, whole: _InOrderHash) -> None:
        rel, transport, partial = self.rel, self.transport, self.partial
        piece = _PieceSink(sink, offset, length, rel, partial, self.progress, self.writing)
        args = [self.run_dir, rel, str(offset), str(length), partial.state]
        try:
            done = await self.lanes.run(
                lambda: transport.stream_out_on_thread("send_range", args, piece.take)
            )
        except BaseException as error:
            # The thread has ended (the transport waits for it): `got` is final.
            if piece.got != piece.noted and not isinstance(error, OSError):
                # Cut or cancelled: as far as it came (a local disk error discards it all).
                with contextlib.suppress(OSError):
                    partial.note_landed(offset, piece.got)
            raise
        said = file_scripts.range_sent(done)
        if said.changed:
            raise fetch_unverified(rel)
        if done.returncode != answers.Exit.OK:
            raise _failed(transport, rel, file_scripts.failed_read(done), done.error_text)
        if said.sha256 is None or piece.got != length:
            # The stream broke off before the far side's verdict: a cut, not damage; what
            # landed stays for the next fetch, which checks it with the far side.
            partial.note_landed(offset, piece.got)
            raise app_error(
                Kind.TRANSFER_FAILED,
                f"{transport.alias}: reading {rel} broke off ({done.error_text}); "
                "fetch again to resume from what arrived.",
            )
        if said.sha256 != piece.digest.hexdigest():
            raise fetch_unverified(rel)
        self.sent += length
        partial.done(offset, length)
        whole.advance(_joined(partial.verified))


class _PieceSink:
    """Where one piece's bytes land. `take` runs on the stream's own thread (byte_pump.py):
    it writes and hashes there, and hands the loop only counts (the progress, and every
    LANDED_STEP how far the piece landed, which a killed daemon leaves behind)."""

    def __init__(
        self,
        sink: int,
        offset: int,
        length: int,
        rel: str,
        partial: Partial,
        progress: Progress,
        writing: threading.Lock,
    ) -> None:
        self.sink = sink
        self.writing = writing
        self.offset = offset
        self.length = length
        self.rel = rel
        self.partial = partial
        self.progress = progress
        self.digest = hashlib.sha256()
        self.got = self.noted = 0
        self.loop = asyncio.get_running_loop()

    def take(self, block: memoryview) -> None:
        if self.got + len(block) > self.length:
            raise fetch_unverified(self.rel)
        written, at = 0, self.offset + self.got
        with self.writing:
            while written < len(block):
                step = block[written : written + WRITE_STEP]
                written += os.pwrite(self.sink, step, at + written)
        self.got += len(block)
        self.digest.update(block)
        note = self.got - self.noted >= LANDED_STEP
        self.loop.call_soon_threadsafe(self.told, len(block), self.got if note else 0)
        if note:
            self.noted = self.got

    def told(self, count: int, landed: int) -> None:
        # Noted before it is told: a client that sees the bytes may kill the daemon at once.
        if landed:
            self.partial.note_landed(self.offset, landed)
        self.progress(count)


def _joined(verified: dict[int, int]) -> int:
    """How many bytes from the start are verified without a gap."""
    at = 0
    while verified.get(at, 0) > 0:
        at += verified[at]
    return at


class _InOrderHash:
    """The whole copy's sha256, taken in a thread of its own as the verified bytes from the
    start join up (pieces land out of order), so that little is left to hash at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.digest = hashlib.sha256()
        self._ready = threading.Condition()
        self._upto = 0
        self._finished = False
        self._stopped = False

    def advance(self, upto: int) -> None:
        with self._ready:
            if upto > self._upto:
                self._upto = upto
                self._ready.notify()

    def finish(self) -> None:
        """No more bytes come: hash up to the last `advance` and end."""
        with self._ready:
            self._finished = True
            self._ready.notify()

    def stop(self) -> None:
        """End now (the fetch failed or is done)."""
        with self._ready:
            self._stopped = True
            self._ready.notify()

    def _may_go(self, at: int) -> bool:
        return self._stopped or self._finished or self._upto > at

    def work(self, _pump: Pump) -> None:
        at = 0
        with open(self.path, "rb") as source:
            while True:
                with self._ready:
                    self._ready.wait_for(functools.partial(self._may_go, at))
                    if self._stopped:
                        return
                    upto = self._upto
                    if at >= upto and self._finished:
                        return
                while at < upto:
                    chunk = os.pread(source.fileno(), min(HASH_BLOCK, upto - at), at)
                    if not chunk:
                        return  # shorter than verified: the size check refuses it
                    self.digest.update(chunk)
                    at += len(chunk)


def _range_hashes(path: Path, ranges: list[tuple[int, int]]) -> list[str]:
    """The sha256 of each (offset, length) of local file `path`, as far as it holds them."""
    found = []
    with open(path, "rb") as source:
        for offset, length in ranges:
            digest = hashlib.sha256()
            at, end = offset, offset + length
            while at < end and (chunk := os.pread(source.fileno(), min(HASH_BLOCK, end - at), at)):
                digest.update(chunk)
                at += len(chunk)
            found.append(digest.hexdigest())
    return found


async def _fetch_plainly(
    transport: Transport,
    run_dir: str,
    rel: str,
    listed: int,
    target: Path,
    progress: Progress,
    source: str,
) -> tuple[str, int]:
    partial = Partial.open(target, source, "", -1)
    try:
        sha = await whole_file.download(transport, run_dir, rel, partial.data, progress)
        sent = partial.data.stat().st_size
        if sent != listed:
            # Whole and unchanged while sent, but not the file that was listed.
            raise fetch_unverified(rel)
        os.replace(partial.data, target)
    finally:
        partial.discard()
    return sha, sent


def _failed(transport: Transport, rel: str, error: FarError | None, text: str) -> Exception:
    kind = error.word if error is not None else None
    if kind == ErrorWord.PATH_OUTSIDE_RUN:
        return app_error(
            Kind.PATH_OUTSIDE_RUN,
            f"{rel!r} points outside the run directory (a symlink?); rtrain fetches only the "
            "run's own files.",
        )
    if kind in (ErrorWord.NOT_FOUND, ErrorWord.NOT_A_FILE):
        return app_error(Kind.REMOTE_FILE_MISSING, f"{rel} is gone from the run directory.")
    why = str(error or "") or text
    return app_error(Kind.TRANSFER_FAILED, f"{transport.alias}: reading {rel} failed: {why}")
