"""Ship local files into a run directory, each verified by its sha256 on the far side.

`ship_files` is the one way a start puts its inputs on the host; how the bytes travel (today:
one verified upload per file, a few side by side) is its own business.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from rtrain.daemon.remote import contract
from rtrain.daemon.ssh.transport import Transport
from rtrain.protocol.errors import Kind, app_error
from rtrain.protocol.messages import ShippedFile

from .run_inputs import Inputs, LocalFile

# Uploads side by side: the config does not wait behind a big dataset, and on a long link the
# round trips that open each channel overlap; more would only contend for the same link.
SIDE_BY_SIDE = 4


class ShipProgress:
    """Bytes and files shipped so far; `changed` hears of each step."""

    def __init__(self, inputs: Inputs, changed: Callable[[ShipProgress], None]) -> None:
        self.total_bytes = inputs.total_bytes
        self.total_files = len(inputs.files)
        self.done_bytes = 0
        self.done_files = 0
        self._changed = changed

    def bytes_moved(self, count: int) -> None:
        self.done_bytes += count
        self._changed(self)

    def file_landed(self) -> None:
        self.done_files += 1
        self._changed(self)


async def ship_files(
    transport: Transport, run_dir: str, run_id: str, inputs: Inputs, progress: ShipProgress
) -> list[ShippedFile]:
    """Put every file of `inputs` at its place under `run_dir`; what landed, in input order.
    Raises the first failure (the others are stopped)."""
    if inputs.dirs:
        await _tree(transport, run_dir, run_id, inputs.dirs, [])
    shipped: dict[str, ShippedFile] = {}
    gate = asyncio.Semaphore(SIDE_BY_SIDE)

    async def ship(item: LocalFile) -> None:
        async with gate:
            shipped[item.rel] = await _ship_one(transport, run_dir, item, progress)
            progress.file_landed()

    try:
        async with asyncio.TaskGroup() as group:
            for item in inputs.files:
                group.create_task(ship(item))
    except BaseExceptionGroup as failed:
        # The first failure stopped the others; it is the one to tell, as for one file.
        raise failed.exceptions[0] from None
    runnable = [f.rel for f in inputs.files if f.executable]
    if runnable:
        # Uploads land private and not executable; a script of the code keeps its x bit.
        await _tree(transport, run_dir, run_id, [], runnable)
    return [shipped[f.rel] for f in inputs.files]


async def _ship_one(
    transport: Transport, run_dir: str, item: LocalFile, progress: ShipProgress
) -> ShippedFile:
    if isinstance(item.source, bytes):
        path, temporary = _bytes_file(item.source), True
    else:
        path, temporary = item.source, False
    try:
        digest = await asyncio.to_thread(sha256_of, path)
        await transport.upload(path, f"{run_dir}/{item.rel}", digest, progress.bytes_moved)
    finally:
        if temporary:
            os.unlink(path)
    return ShippedFile(path=item.rel, size=item.size, sha256=digest)


async def _tree(
    transport: Transport, run_dir: str, run_id: str, dirs: list[str], executables: list[str]
) -> None:
    done = await contract.input_tree(transport, run_dir, run_id, dirs, executables)
    if not done.ok:
        why = " ".join(done.error or []) or done.error_text
        raise app_error(
            Kind.TRANSFER_FAILED, f"{transport.alias}: preparing the run directory failed: {why}"
        )


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _bytes_file(data: bytes) -> Path:
    fd, name = tempfile.mkstemp(prefix="rtrain-ship-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return Path(name)
