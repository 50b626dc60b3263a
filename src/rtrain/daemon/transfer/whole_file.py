"""One file in one piece, either way: through a script's byte stream (receive.sh, send.sh),
or, on a transport without streams (the console), in checksummed chunks (console_chunks.py).

The transfer engine takes this way for a file of one piece and on the console; restart reads
a run's meta.json with it. The transports only run scripts and stream bytes; what a file's
move means (hashes at both ends, the far side's verdict) is decided here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from pathlib import Path

from rtrain.daemon.remote.contract.answers import Exit
from rtrain.daemon.remote.contract.file_scripts import received, sent
from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.transfer import console_chunks
from rtrain.daemon.transports.transport import STALL_TIMEOUT, Transport
from rtrain.protocol.errors import Kind, app_error

from .failed_transfers import fetch_unverified, raise_for_failed_upload

Progress = Callable[[int], None]
CHUNK = 1024 * 1024
# After the last byte the far side hashes what it received; allow it this many bytes/s.
HASH_RATE = 20e6


async def upload(
    transport: Transport,
    local: Path,
    remote_path: str,
    sha256: str,
    progress: Progress | None = None,
) -> None:
    """Copy `local` to `remote_path`, landing only if the far side's sha256 matches."""
    if not transport.streams:
        await console_chunks.upload(_console(transport), local, remote_path, sha256, progress)
        return

    def chunks() -> Iterator[bytes]:
        with open(local, "rb") as source:
            while chunk := source.read(CHUNK):
                yield chunk
                if progress:
                    progress(len(chunk))

    done = await transport.stream_in(
        "receive",
        [remote_path, sha256],
        chunks,
        answer_within=STALL_TIMEOUT + local.stat().st_size / HASH_RATE,
    )
    if not received(done).ok:
        raise_for_failed_upload(transport.alias, local, done)


async def download(
    transport: Transport, run_dir: str, rel: str, dest: Path, progress: Progress | None = None
) -> str:
    """Write far file `run_dir/rel` into `dest`; returns the sha256 of what arrived, once
    the far side vouched for the same bytes (it hashed what it read, and the file held
    still meanwhile). Raises TRANSFER_FAILED (`fetch_unverified`) when it did not."""
    if not transport.streams:
        return await console_chunks.download(_console(transport), run_dir, rel, dest, progress)
    digest = hashlib.sha256()
    with open(dest, "wb") as sink:

        def take(chunk: bytes) -> None:
            sink.write(chunk)
            digest.update(chunk)
            if progress:
                progress(len(chunk))

        done = await transport.stream_out("send", [run_dir, rel], take)
    # send.sh hashed the bytes as it sent them; its verdict is a machine line on stderr.
    said = sent(done)
    if said.changed:
        raise fetch_unverified(rel)
    if done.returncode == Exit.NOT_A_RUN:
        raise app_error(
            Kind.NOT_A_RUN, f"{transport.alias}: {done.error_text}; nothing was read from it."
        )
    if done.returncode != Exit.OK:
        raise app_error(
            Kind.TRANSFER_FAILED, f"{transport.alias}: reading {rel} failed: {done.error_text}"
        )
    got = digest.hexdigest()
    if said.sha256 != got:
        raise fetch_unverified(rel)
    return got


def _console(transport: Transport) -> ConsoleTransport:
    """A transport without byte streams: the console, whose requests carry the chunks."""
    if not isinstance(transport, ConsoleTransport):
        raise TypeError(f"{type(transport).__name__} offers no byte streams and no console")
    return transport
