"""Bring one far file home: striped over several channels, resumable, verified end to end.

The far side first names the file's state (device, inode, size, mtime). Its pieces then come
side by side, each on a channel of its own (send_range.sh), each hashed by the far side as it
leaves and here as it lands, and each only while the file is still in that state; a verified
piece is recorded in the partial copy (partial.py), so a cut fetch resumes from it. Meanwhile
the far side hashes the whole file once more, with the same state check; the copy becomes the
target only when its own sha256 is that one. On a transport without byte streams (the
console) the file comes through `Transport.download`, with the same temporary place.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from rtrain.daemon.remote.contract import answers, file_scripts
from rtrain.daemon.remote.error_words import ErrorWord, FarError
from rtrain.daemon.ssh.transport import Transport, Unverified, fetch_unverified
from rtrain.protocol.errors import Kind, app_error

from .lanes import Lanes, first_error
from .partial import Partial, claimed
from .plan import PIECE, pieces

Progress = Callable[[int], None]
# The far side hashes the whole file while the pieces come; allow it this many bytes/s.
HASH_RATE = 20e6


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
        if isinstance(error, (OSError, Unverified)) or not partial.verified:
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
    """One file fetched as pieces side by side, each verified on arrival, then the whole:
    the pieces verified by an earlier fetch are kept, not fetched again."""

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
        cut = pieces(partial.size)
        for offset, length in cut:
            if partial.verified.get(offset) == length:
                self.progress(length)
        todo = [(o, n) for o, n in cut if partial.verified.get(o) != n]
        with open(partial.data, "r+b") as sink:
            try:
                async with asyncio.TaskGroup() as group:
                    # One piece is the whole file: its own hash is the whole file's.
                    far_sha = group.create_task(self.whole_hash()) if len(cut) > 1 else None
                    for offset, length in todo:
                        group.create_task(self.get(sink.fileno(), offset, length))
            except BaseExceptionGroup as failed:
                raise first_error(failed) from None
            sink.flush()
        got_sha = await asyncio.to_thread(_sha256_of, partial.data)
        if os.stat(partial.data).st_size != partial.size:
            raise fetch_unverified(self.rel)
        if far_sha is not None and far_sha.result() != got_sha:
            raise fetch_unverified(self.rel)
        if far_sha is None and not todo:
            # Resumed with nothing left to fetch and no far hash taken: take it now.
            if await self.whole_hash() != got_sha:
                raise fetch_unverified(self.rel)
        return got_sha, self.sent

    async def whole_hash(self) -> str:
        size, rel = self.partial.size, self.rel
        done = await self.lanes.run(
            lambda: file_scripts.file_state(
                self.transport, self.run_dir, rel, hashed=True, timeout=60 + size / HASH_RATE
            )
        )
        if done.changed or (done.state is not None and done.state != self.partial.state):
            raise fetch_unverified(rel)
        if done.exit != answers.Exit.OK or done.sha256 is None:
            raise _failed(self.transport, rel, done.error, done.error_text)
        return done.sha256

    async def get(self, sink: int, offset: int, length: int) -> None:
        rel, transport = self.rel, self.transport
        digest = hashlib.sha256()
        got = 0

        def take(chunk: bytes) -> None:
            nonlocal got
            if got + len(chunk) > length:
                raise fetch_unverified(rel)
            os.pwrite(sink, chunk, offset + got)
            got += len(chunk)
            digest.update(chunk)
            self.progress(len(chunk))

        args = [self.run_dir, rel, str(offset), str(length), self.partial.state]
        done = await self.lanes.run(lambda: transport.stream_out("send_range", args, take))
        said = file_scripts.range_sent(done)
        if said.changed:
            raise fetch_unverified(rel)
        if done.returncode != answers.Exit.OK:
            raise _failed(transport, rel, file_scripts.failed_read(done), done.error_text)
        if said.sha256 is None or got != length:
            # The stream broke off before the far side's verdict: a cut, not damage; the
            # pieces verified so far stay for the next fetch.
            raise app_error(
                Kind.TRANSFER_FAILED,
                f"{transport.alias}: reading {rel} broke off ({done.error_text}); "
                "fetch again to resume from the pieces that arrived.",
            )
        if said.sha256 != digest.hexdigest():
            raise fetch_unverified(rel)
        self.sent += length
        self.partial.done(offset, length)


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
        sha = await transport.download(run_dir, rel, partial.data, progress)
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


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()
