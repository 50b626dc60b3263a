"""Files both ways over a console, without scp or sftp: checksummed chunks.

Each chunk is one console request (see console_session.py), so it carries its own sha256
both ways and is sent again when it arrives damaged; a chunk that keeps arriving damaged
fails the transfer. Chunks go over up to WINDOW consoles at once.

Uploads write `DEST.part` on the far side: the first chunk alone (it starts the file), the
middle ones at their offsets in any order (writing one twice is harmless), then the last
chunk alone with the whole file's sha256; the far side renames the part into place only when
that matches, as receive.sh does. Downloads read the file at offsets, with send.sh's path
checks, until a short chunk; then the far side hashes the whole file (hash_file.sh), and
the download counts only if that matches the sha256 of the chunks, so a file that changed
between chunks is refused. Nothing is reported done that was not verified.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import weakref
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rtrain.daemon.remote import script
from rtrain.daemon.remote.contract import answers, file_scripts
from rtrain.daemon.ssh.console_framing import Request
from rtrain.daemon.transports.transport import Completed
from rtrain.protocol.errors import Kind, RpcError, app_error

from .failed_transfers import fetch_unverified, raise_for_failed_upload

log = logging.getLogger(__name__)
Progress = Callable[[int], None]

# Raw bytes per chunk; base64 makes a third more on the wire. Damage halves the upload chunk
# down to MIN_CHUNK; every size is a multiple of MIN_CHUNK, the unit of the far side's dd.
UPLOAD_CHUNK = 1024 * 1024
DOWNLOAD_CHUNK = 2 * 1024 * 1024
MIN_CHUNK = 64 * 1024
WINDOW = 3
CHUNK_TIMEOUT = 60.0
# The last chunk waits for the far side to hash the whole file; allow it this many bytes/s.
HASH_RATE = 20e6


# After these, asking the host to clean up would only wait for the same failure again.
_UNREACHABLE = (
    Kind.HOST_UNREACHABLE,
    Kind.AUTH_FAILED,
    Kind.LOGIN_REQUIRED,
    Kind.HOST_KEY_CHANGED,
)


def put_script() -> str:
    return script("put_chunk")


def get_script() -> str:
    return script("get_range")


class Channel(Protocol):
    """What the chunk loops need from the console transport: its requests, and how many
    arrived damaged."""

    alias: str

    @property
    def damaged(self) -> int:
        """Requests and answers that arrived damaged so far (and were sent again)."""
        ...

    async def execute(
        self, request: Request, timeout: float, what: str, *, idempotent: bool
    ) -> Completed: ...


# The upload chunk size that worked last on each console transport (smaller after damage),
# for its next file.
_learned: weakref.WeakKeyDictionary[Channel, int] = weakref.WeakKeyDictionary()


async def upload(
    channel: Channel,
    local: Path,
    remote_path: str,
    sha256: str,
    progress: Progress | None,
    window: int = WINDOW,
) -> None:
    """Ship `local` to `remote_path`. On failure the far part file is removed where
    possible."""
    try:
        _learned[channel] = await _upload_chunks(
            channel, local, remote_path, sha256, progress, _learned.get(channel, UPLOAD_CHUNK),
            window,
        )  # fmt: skip
    except RpcError as error:
        if error.kind not in _UNREACHABLE:
            with contextlib.suppress(RpcError):
                await channel.execute(
                    Request.of(script("drop_part"), [remote_path], None),
                    CHUNK_TIMEOUT,
                    f"removing {local.name}.part",
                    idempotent=True,
                )
        raise


async def _upload_chunks(
    channel: Channel,
    local: Path,
    remote_path: str,
    sha256: str,
    progress: Progress | None,
    chunk_size: int = UPLOAD_CHUNK,
    window: int = WINDOW,
) -> int:
    size = local.stat().st_size
    what = f"shipping {local.name}"

    async def put(offset: int, length: int, final: bool) -> None:
        nonlocal chunk_size
        data = await asyncio.to_thread(_read_at, local, offset, length)
        damaged = channel.damaged
        done = await channel.execute(
            Request.of(put_script(), [remote_path, str(offset), sha256 if final else "-"], data),
            CHUNK_TIMEOUT + (size / HASH_RATE if final else 0),
            what,
            idempotent=True,
        )
        if channel.damaged > damaged and chunk_size > MIN_CHUNK:
            chunk_size = max(MIN_CHUNK, chunk_size // 2)
            log.info("%s: chunks arrive damaged; now %d bytes each", channel.alias, chunk_size)
        verdict = file_scripts.received(done)
        if not (verdict.ok if final else verdict.written == offset):
            raise_for_failed_upload(channel.alias, local, done)
        if progress and length:
            progress(length)

    if size <= chunk_size:
        await put(0, size, True)
        return chunk_size
    await put(0, chunk_size, False)
    offset = chunk_size
    pending: set[asyncio.Task[None]] = set()
    try:
        while size - offset > chunk_size or pending:
            while len(pending) < max(1, window) and size - offset > chunk_size:
                pending.add(asyncio.ensure_future(put(offset, chunk_size, False)))
                offset += chunk_size
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                task.result()
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    await put(offset, size - offset, True)
    return chunk_size


def _read_at(path: Path, offset: int, length: int) -> bytes:
    with open(path, "rb") as source:
        source.seek(offset)
        return source.read(length)


async def download(
    channel: Channel,
    run_dir: str,
    rel: str,
    dest: Path,
    progress: Progress | None,
    chunk_size: int = DOWNLOAD_CHUNK,
    window: int = WINDOW,
) -> str:
    """Write far file `run_dir/rel` into `dest`; the sha256 of what arrived, once the far
    side's hash of the whole file matched it (else TRANSFER_FAILED).

    `window` chunks are asked for at once (on as many consoles), so one console's transfer
    overlaps the far side's work on the next chunk; they are written in order.
    """
    got, size = await _download_chunks(channel, run_dir, rel, dest, progress, chunk_size, window)
    far = await channel.execute(
        Request.of(script("hash_file"), [run_dir, rel], None),
        CHUNK_TIMEOUT + size / HASH_RATE,
        f"hashing {rel}",
        idempotent=True,
    )
    whole = file_scripts.hashed(far)
    if whole is None:
        raise app_error(
            Kind.TRANSFER_FAILED, f"{channel.alias}: hashing {rel} failed: {far.error_text}"
        )
    if (whole.size, whole.sha256) != (size, got):
        raise fetch_unverified(rel)
    return got


async def _download_chunks(
    channel: Channel,
    run_dir: str,
    rel: str,
    dest: Path,
    progress: Progress | None,
    chunk_size: int,
    window: int,
) -> tuple[str, int]:
    """The chunks of the file into `dest`: the sha256 and size of what arrived."""

    async def chunk(offset: int) -> bytes:
        done = await channel.execute(
            Request.of(get_script(), [run_dir, rel, str(offset), str(chunk_size)], None),
            CHUNK_TIMEOUT,
            f"reading {rel}",
            idempotent=True,
        )
        if done.returncode != answers.Exit.OK:
            raise app_error(
                Kind.TRANSFER_FAILED, f"{channel.alias}: reading {rel} failed: {done.error_text}"
            )
        return done.stdout

    digest = hashlib.sha256()
    size = 0
    asked = 0
    # The first chunk alone: most files fit in it, and then need one console only.
    in_flight = 1
    pending: deque[asyncio.Task[bytes]] = deque()
    try:
        with open(dest, "wb") as sink:
            while True:
                while len(pending) < in_flight:
                    pending.append(asyncio.ensure_future(chunk(asked)))
                    asked += chunk_size
                data = await pending.popleft()
                in_flight = max(1, window)
                sink.write(data)
                digest.update(data)
                size += len(data)
                if progress and data:
                    progress(len(data))
                if len(data) < chunk_size:
                    return digest.hexdigest(), size
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
