"""Ship many small files of a start's inputs in one stream (receive_tree.sh) instead of a
channel, and a round trip or two, per file.

The stream is a list of the files with the sha256 each was hashed to here, then a tar of
them (Python's tarfile writes it a file at a time, so no more than one small file is ever in
memory). The far side unpacks it into a hidden folder of the run directory, hashes every file
there in one batch, and moves them under their names only when each has its sha256: a file
that changed here after it was hashed is refused, and nothing lands. Each content also
enters the host's input cache, so the next start places it instead of sending it again.
"""

from __future__ import annotations

import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from rtrain.daemon.remote.contract.answers import Exit, Lines
from rtrain.daemon.ssh.transport import STALL_TIMEOUT, Completed, Transport

# The largest file that goes in the stream, and the fewest files worth one.
MOST_BYTES = 1024 * 1024
FEWEST = 8
# The most one stream carries: a tar member list the far side reads line by line.
BATCH_FILES = 2000
# The far side hashes the whole batch once more before it keeps it; allow it this many bytes/s.
HASH_RATE = 20e6

Progress = Callable[[int], None]


class SmallFile(Protocol):
    @property
    def path(self) -> Path: ...
    @property
    def name(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def sha256(self) -> str: ...


class Changed(Exception):
    """A file is not the one hashed before: it changed here while it was shipped."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Collect:
    """What tarfile writes, taken out a file at a time."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        return data


def stream(files: Sequence[SmallFile], advance: Progress) -> Iterator[bytes]:
    """The bytes receive_tree.sh reads: the list, then the tar: each content once as
    `c/SHA256`, each name as `t/NAME`, a hard link to its content (no byte of its own)."""
    listing = "".join(f"{f.sha256}\t{f.name}\n" for f in files)
    yield f"{len(files)}\n{listing}".encode()
    out = _Collect()
    now = int(time.time())
    sent: set[str] = set()
    with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
        for f in files:
            content = f"c/{f.sha256}"
            if f.sha256 not in sent:
                sent.add(f.sha256)
                info = _info(content, now)
                info.size = f.size
                try:
                    with open(f.path, "rb") as source:
                        tar.addfile(info, source)
                except OSError as error:
                    # tarfile says a file that shrank ended early; of one that grew, the
                    # first bytes go, and the far side's hash of them tells.
                    if "unexpected end of data" in str(error):
                        raise Changed(f.name) from None
                    raise
            link = _info(f"t/{f.name}", now)
            link.type = tarfile.LNKTYPE
            link.linkname = content
            tar.addfile(link)
            yield out.take()
            advance(f.size)
    yield out.take()


def _info(name: str, mtime: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = 0o600
    info.mtime = mtime
    return info


async def ship_stream(
    transport: Transport, workdir: str, run_dir: str, files: list[SmallFile], advance: Progress
) -> Completed:
    """Run receive_tree.sh over `files`; its answer (see `verdict`)."""
    total = sum(f.size for f in files)
    run_id = run_dir.rstrip("/").rpartition("/")[2]
    return await transport.stream_in(
        "receive_tree",
        [workdir, run_dir, run_id],
        lambda: stream(files, advance),
        answer_within=STALL_TIMEOUT + total / HASH_RATE,
    )


def verdict(done: Completed) -> tuple[bool, list[str], list[str] | None]:
    """(all received, the names that arrived other than hashed, the error line)."""
    lines = Lines(done.stdout)
    mismatched = [row[0] for row in lines.rows("mismatch") if row]
    received = lines.value("received") is not None and done.returncode == Exit.OK
    return received, mismatched, lines.last("error")


F = TypeVar("F", bound=SmallFile)


def batches(files: list[F]) -> list[list[F]]:
    return [files[i : i + BATCH_FILES] for i in range(0, len(files), BATCH_FILES)]
