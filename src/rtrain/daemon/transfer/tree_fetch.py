"""Bring many small far files home in a few streams instead of a channel (and a round trip)
per file.

The files are cut into batches; each batch is one run of send_tree.sh, which sends its files
one after another and then, for each, the sha256 and the state before and after (device,
inode, size, mtime). The stream is cut here by the sizes the listing gave, each share hashed
as it lands in its own temporary copy. A file lands under its name only when its share has
the far sha256 and its far state held still; any other (it changed, grew or went away) is
handed back for the one-file path, which refuses a file that keeps changing. A cut batch
loses only its own files: those of batches done are home, and the next fetch skips them.

Each file's bytes wait in a copy of its own in the target's partial folder (partial.py), named
for this stream, and move under the file's name only once verified; a killed daemon's copies
are swept by the next fetch into the same folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from rtrain.daemon.remote.contract import file_scripts
from rtrain.daemon.transports.transport import Transport
from rtrain.protocol.errors import Kind, app_error

from .lanes import Lanes, first_error
from .partial import drop_stream_copies, stream_copy, sweep_stream_copies
from .plan import MIB

# The most one batch carries: what a cut costs, and how finely the streams share the work.
BATCH_BYTES = 32 * MIB
BATCH_FILES = 1000
# A stream costs a far-side script of its own: below this much a second one does not pay.
STREAM_SHARE = 8 * MIB

Progress = Callable[[int], None]


@dataclass(frozen=True)
class TreeFile:
    path: str  # relative to the run directory, as listed
    size: int
    target: Path
    source: str  # the far file, host and path: names its temporary copy


class WriteFailed(Exception):
    """The local disk refused a write for `target`."""

    def __init__(self, target: Path, error: OSError) -> None:
        super().__init__(str(error))
        self.target = target
        self.error = error


@dataclass
class Streamed:
    landed: dict[str, str]  # path -> sha256, verified and under its name
    left: list[TreeFile]  # not vouched for by the stream: for the one-file path
    sent: int  # bytes of the files that landed


async def fetch_streamed(
    transport: Transport,
    lanes: Lanes,
    run_dir: str,
    files: list[TreeFile],
    progress: Progress,
) -> Streamed:
    for folder in {f.target.parent for f in files}:
        sweep_stream_copies(folder)
    total = sum(f.size for f in files)
    streams = max(1, min(lanes.limit, math.ceil(total / STREAM_SHARE)))
    batches = deque(batched(files, min(BATCH_BYTES, math.ceil(total / streams) or 1)))
    result = Streamed({}, [], 0)

    async def worker() -> None:
        while batches:
            batch = batches.popleft()
            await _one_stream(transport, lanes, run_dir, batch, progress, result)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(streams, len(batches))):
                group.create_task(worker())
    except BaseExceptionGroup as failed:
        raise first_error(failed) from None
    return result


def batched(files: list[TreeFile], most_bytes: int) -> list[list[TreeFile]]:
    """Consecutive runs of `files` of at most `most_bytes` (or BATCH_FILES files) each."""
    found: list[list[TreeFile]] = []
    batch: list[TreeFile] = []
    size = 0
    for f in files:
        if batch and (size + f.size > most_bytes or len(batch) >= BATCH_FILES):
            found.append(batch)
            batch, size = [], 0
        batch.append(f)
        size += f.size
    if batch:
        found.append(batch)
    return found


class _Cutter:
    """Cuts one batch's stream into its files' temporary copies, hashing each share."""

    def __init__(self, batch: list[TreeFile], progress: Progress) -> None:
        self.batch = batch
        self.progress = progress
        self.copies = [stream_copy(f.target, f.source) for f in batch]
        self.digests: list[str | None] = [None] * len(batch)
        self.index = 0
        self._out: IO[bytes] | None = None
        self._hash = hashlib.sha256()
        self._got = 0
        self._settle()

    def take(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view and self.index < len(self.batch):
            f = self.batch[self.index]
            if self._out is None:
                self._out = self._open(self.index)
            share = view[: f.size - self._got]
            try:
                self._out.write(share)
            except OSError as error:
                raise WriteFailed(f.target, error) from None
            self._hash.update(share)
            self._got += len(share)
            self.progress(len(share))
            view = view[len(share) :]
            if self._got == f.size:
                self._finish()
        # Bytes past the last file: some file grew; its hash tells which.

    def _open(self, index: int) -> IO[bytes]:
        copy = self.copies[index]
        try:
            try:
                return open(copy, "wb")
            except FileNotFoundError:
                # Made again: a file fetched beside it may have removed the folder, once empty.
                copy.parent.mkdir(exist_ok=True)
                return open(copy, "wb")
        except OSError as error:
            raise WriteFailed(self.batch[index].target, error) from None

    def _finish(self) -> None:
        self._close_one()
        self._settle()

    def _close_one(self) -> None:
        out = self._out or self._open(self.index)
        try:
            out.close()
        except OSError as error:
            raise WriteFailed(self.batch[self.index].target, error) from None
        self.digests[self.index] = self._hash.hexdigest()
        self.index += 1
        self._out, self._hash, self._got = None, hashlib.sha256(), 0

    def _settle(self) -> None:
        # An empty file takes no byte of the stream: it is whole as soon as it is next.
        while self.index < len(self.batch) and self.batch[self.index].size == 0:
            self._close_one()

    def close(self) -> None:
        """Close the copy in progress; its last buffered bytes go to disk now."""
        out, self._out = self._out, None
        if out is not None:
            try:
                out.close()
            except OSError as error:
                raise WriteFailed(self.batch[self.index].target, error) from None

    def abandon(self) -> None:
        """Close the copy in progress after the stream failed: it is dropped anyway, so a
        write that fails now (the disk that filled up) is not the news."""
        with contextlib.suppress(WriteFailed):
            self.close()


async def _one_stream(
    transport: Transport,
    lanes: Lanes,
    run_dir: str,
    batch: list[TreeFile],
    progress: Progress,
    result: Streamed,
) -> None:
    cutter = _Cutter(batch, progress)
    names = "".join(f"{f.path}\n" for f in batch).encode()
    try:
        try:
            done = await lanes.run(
                lambda: transport.stream_out("send_tree", [run_dir], cutter.take, stdin=names)
            )
        except BaseException:
            cutter.abandon()
            raise
        cutter.close()
        said = file_scripts.tree_sent(done)
        if said.count is None:
            raise _stream_failed(transport, batch, said.error, done.error_text)
        for index, f in enumerate(batch):
            copy = cutter.copies[index]
            if (
                said.held[index]
                and said.sizes[index] == f.size
                and cutter.digests[index] == said.sha256[index]
            ):
                try:
                    os.replace(copy, f.target)
                except OSError as error:
                    raise WriteFailed(f.target, error) from None
                result.landed[f.path] = said.sha256[index]
                result.sent += f.size
            else:
                result.left.append(f)
    finally:
        # What did not move under its name; and the partial folders, once empty.
        drop_stream_copies(cutter.copies)


def _stream_failed(
    transport: Transport, batch: list[TreeFile], error: list[str] | None, text: str
) -> Exception:
    """The error for a stream that never got to its verdict: a refusal of the far side's,
    or a stream that broke off (the files that landed before stay home)."""
    kind, *rest = (error or []) + [""]
    if kind == "path_outside_run":
        return app_error(
            Kind.PATH_OUTSIDE_RUN,
            f"{rest[0] or batch[0].path!r} points outside the run directory (a symlink?); "
            "rtrain fetches only the run's own files.",
        )
    if kind in ("not_a_file", "not_found"):
        return app_error(
            Kind.REMOTE_FILE_MISSING, f"{rest[0] or batch[0].path} is gone from the run directory."
        )
    return app_error(
        Kind.TRANSFER_FAILED,
        f"{transport.alias}: reading {len(batch)} file(s) of the tree broke off "
        f"({' '.join(error or []) or text}); fetch again: the files that arrived are kept.",
    )
