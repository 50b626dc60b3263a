"""Bring one far file home: striped over several channels, resumable, verified end to end.

The far side first names the file's state (device, inode, size, mtime). Its pieces then come
side by side, each on a channel of its own (send_range.sh), each hashed by the far side as it
leaves and here as it lands, and each only while the file is still in that state; a verified
piece is recorded in the partial copy (partial.py), so a cut fetch resumes from it. Of a piece
that was in flight, the copy notes how far it landed; the next fetch has the far side hash
those bytes (hash_ranges.sh, with the same state check) and keeps them when the hashes agree,
so a cut costs little more than what was in flight when it came. Every byte is thus vouched
for by the far side while the file was in one state, so the sha256 of the whole file, the
answer, is the one the far side takes of it in that state (beside the pieces, on a lane of
its own): the bytes are hashed here once, not a second time in order. The pieces are written
past the page cache where the filesystem allows it (landing_file.py). On a transport without
byte streams (the console) the file comes through `whole_file.download`, with the same
temporary place.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from rtrain.daemon.remote.contract import answers, file_scripts
from rtrain.daemon.remote.error_words import ErrorWord, FarError
from rtrain.daemon.transfer import whole_file
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, app_error

from .failed_transfers import Unverified, fetch_unverified
from .landing_file import LandingFile
from .lanes import Lanes, first_error
from .partial import Partial, claimed
from .plan import LANDED_STEP, PIECE, fetch_pieces, missing

Progress = Callable[[int], None]
# The far side hashes the whole file, and what a cut fetch landed before it is kept; allow
# it this many bytes/s.
HASH_RATE = 20e6
HASH_BLOCK = 1024 * 1024


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

    async def run(self) -> tuple[str, int]:
        partial = self.partial
        await self.keep_what_landed()
        todo = missing(fetch_pieces(partial.size), partial.verified)
        self.progress(partial.size - sum(length for _offset, length in todo))
        landing = LandingFile(partial.data)
        try:
            async with asyncio.TaskGroup() as group:
                # Asked first, so the far side reads the file into its cache for the pieces.
                whole = group.create_task(self.whole_sha256())
                for offset, length in todo:
                    group.create_task(self.get(landing, offset, length))
        except BaseExceptionGroup as failed:
            raise first_error(failed) from None
        finally:
            landing.close()
        if os.stat(partial.data).st_size != partial.size:
            raise fetch_unverified(self.rel)
        return whole.result(), self.sent

    async def whole_sha256(self) -> str:
        """The far file's sha256, taken while it was in the state every piece was read in:
        the pieces verified one by one join up into exactly that file, so this is the
        sha256 of the copy too, and the bytes are not hashed here a second time."""
        partial = self.partial
        far = await self.lanes.run(
            lambda: file_scripts.hash_ranges(
                self.transport, self.run_dir, self.rel, partial.state, [(0, partial.size)],
                timeout=60 + partial.size / HASH_RATE,
            )
        )  # fmt: skip
        if far.changed:
            raise fetch_unverified(self.rel)
        if far.exit != answers.Exit.OK:
            raise _failed(self.transport, self.rel, far.error, far.error_text)
        sha = far.sha256.get((0, partial.size))
        if sha is None:
            raise _failed(self.transport, self.rel, None, "no sha256 of the whole file came")
        return sha

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

    async def get(self, landing: LandingFile, offset: int, length: int) -> None:
        piece = _PieceSink(landing, offset, length, self.rel, self.partial, self.progress)
        try:
            await self.get_into(piece)
        finally:
            piece.stage.close()

    async def get_into(self, piece: _PieceSink) -> None:
        rel, transport, partial = self.rel, self.transport, self.partial
        offset, length = piece.offset, piece.length
        args = [self.run_dir, rel, str(offset), str(length), partial.state]
        try:
            done = await self.lanes.run(
                lambda: transport.stream_out_on_thread("send_range", args, piece.take)
            )
        except BaseException as error:
            # The thread has ended (the transport waits for it): what came is final.
            if not isinstance(error, OSError):
                # Cut or cancelled: as far as it came (a local disk error discards it all).
                with contextlib.suppress(OSError):
                    piece.stage.flush()
                    if piece.got != piece.noted:
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
            piece.stage.flush()
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


class _PieceSink:
    """Where one piece's bytes land. `take` runs on the stream's own thread (byte_pump.py):
    it hashes them and stages them into the file there, and hands the loop only counts (the
    progress, and every LANDED_STEP how far the piece is in the file, which a killed daemon
    leaves behind)."""

    def __init__(
        self,
        landing: LandingFile,
        offset: int,
        length: int,
        rel: str,
        partial: Partial,
        progress: Progress,
    ) -> None:
        self.stage = landing.stage(offset)
        self.offset = offset
        self.length = length
        self.rel = rel
        self.partial = partial
        self.progress = progress
        self.digest = hashlib.sha256()
        self.came = 0
        self.noted = 0
        self.loop = asyncio.get_running_loop()

    @property
    def got(self) -> int:
        """How many of the piece's bytes are in the file."""
        return self.stage.landed - self.offset

    def take(self, block: memoryview) -> None:
        if self.came + len(block) > self.length:
            raise fetch_unverified(self.rel)
        self.came += len(block)
        self.digest.update(block)
        self.stage.add(block)
        if self.came == self.length:
            self.stage.flush()
        got = self.got
        note = got - self.noted >= LANDED_STEP
        self.loop.call_soon_threadsafe(self.told, len(block), got if note else 0)
        if note:
            self.noted = got

    def told(self, count: int, landed: int) -> None:
        # Noted before it is told: a client that sees the bytes may kill the daemon at once.
        if landed:
            self.partial.note_landed(self.offset, landed)
        self.progress(count)


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
