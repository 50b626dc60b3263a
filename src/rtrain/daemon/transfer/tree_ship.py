"""Ship many small files of a start's inputs in one stream (receive_tree.sh) instead of a
channel, and a round trip or two, per file.

The stream is a list of the files with the sha256 each was hashed to here, then a tar of
them, written a file at a time (so no more than one small file is ever in memory). The far
side (one python3 where the host has it, else tar) hashes each file as it lands in a hidden
folder of the run directory, and moves them under their names only when each has its
sha256: a file that changed here after it was hashed is refused, and nothing lands. Each
content also enters the host's input cache (with python3, as soon as it is verified), so
the next start, or the same one again after a cut, places it instead of sending it again.
"""

from __future__ import annotations

import tarfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from rtrain.daemon.remote.contract.answers import Exit, Lines
from rtrain.daemon.transports.transport import STALL_TIMEOUT, Completed, Transport

# The largest file that goes in the stream, and the fewest files worth one.
MOST_BYTES = 1024 * 1024
FEWEST = 8
# The most one stream carries: a host without python3 reads its list line by line in sh.
BATCH_FILES = 2000
# From this many files a tree goes in two streams side by side.
SPLIT_FROM = 400
# The far side hashes the whole batch once more before it keeps it; allow it this many bytes/s.
HASH_RATE = 20e6
# The block and record of tar.
BLOCK = 512
RECORD = 20 * BLOCK

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


def stream(files: Sequence[SmallFile], advance: Progress) -> Iterator[bytes]:
    """The bytes receive_tree.sh reads: the list, then the tar: each content once as
    `c/SHA256`, each name as `t/NAME`, a hard link to its content (no byte of its own)."""
    listing = "".join(f"{f.sha256}\t{f.name}\n" for f in files)
    yield f"{len(files)}\n{listing}".encode()
    now = int(time.time())
    sent: set[str] = set()
    written = 0
    for f in files:
        parts: list[bytes] = []
        if f.sha256 not in sent:
            sent.add(f.sha256)
            data = _content(f)
            parts += [_header(f"c/{f.sha256}", len(data), now, b"0"), data, _padding(len(data))]
        parts.append(_header(f"t/{f.name}", 0, now, b"1", f"c/{f.sha256}"))
        chunk = b"".join(parts)
        written += len(chunk)
        yield chunk
        advance(f.size)
    # Two empty blocks end the archive; tar reads whole records of RECORD bytes.
    yield bytes(2 * BLOCK + (-(written + 2 * BLOCK)) % RECORD)


def _content(f: SmallFile) -> bytes:
    with open(f.path, "rb") as source:
        data = source.read(f.size + 1)
    if len(data) < f.size:
        raise Changed(f.name)
    # Of a file that grew, the first bytes go, and the far side's hash of them tells.
    return data[: f.size]


def _padding(size: int) -> bytes:
    return bytes(-size % BLOCK)


def _header(name: str, size: int, mtime: int, kind: bytes, link: str = "") -> bytes:
    """One tar header: a plain ustar block written here (tarfile takes ten times as long for
    each of thousands of small files), or tarfile's pax form for a name ustar cannot hold."""
    raw, target = name.encode(), link.encode()
    if len(raw) > 100 or len(target) > 100 or not (raw + target).isascii():
        info = tarfile.TarInfo(name)
        info.mode, info.mtime, info.size, info.type = 0o600, mtime, size, kind
        info.linkname = link
        return info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
    block = bytearray(BLOCK)
    block[0 : len(raw)] = raw
    block[100:124] = b"0000600\x000000000\x000000000\x00"
    block[124:136] = b"%011o\x00" % size
    block[136:148] = b"%011o\x00" % mtime
    block[148:156] = b" " * 8
    block[156:157] = kind
    block[157 : 157 + len(target)] = target
    block[257:265] = b"ustar\x0000"
    block[148:156] = b"%06o\x00 " % sum(block)
    return bytes(block)


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
    """Streams of equal length, in the files' order: the far side of a stream is one
    process, so a tree of SPLIT_FROM files or more goes in two streams side by side (a far
    host with two cores receives on both), and a folder that only one of them holds moves
    into the run directory by one rename."""
    if not files:
        return []
    count = max(-(-len(files) // BATCH_FILES), 2 if len(files) >= SPLIT_FROM else 1)
    size = -(-len(files) // count)
    return [files[i : i + size] for i in range(0, len(files), size)]
