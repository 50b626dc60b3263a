"""The file a striped fetch's pieces land in: written by the channels' threads, past the
page cache where the filesystem allows it.

Nobody reads a fetched file before it is whole, so caching it on the way helps nobody, and a
large one pushes out of the cache what the machine does use. Worse, on a virtual machine
that hands its free memory back to its host (virtio-balloon's free page reporting, as on
the machines here), every new page of cache faults on first touch: a 1 GB fetch into the
cache spent 4.8-5.6 s of the daemon's CPU in its writes there, against 0.4-0.6 s written
past it. So each piece gathers its bytes in an aligned buffer of its own (`Stage`) and
writes them with O_DIRECT a MiB of the file at a time. Only the head and tail of a range
that do not fill a block of ALIGN bytes go through the cache (a resumed piece starts where
an earlier fetch's bytes ended), and all of it does where the platform has no O_DIRECT
(macOS) or the filesystem refuses it.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import threading
from pathlib import Path

# O_DIRECT wants offsets, lengths and memory aligned to the disk's logical block: 4 KiB
# covers the 512-byte and 4 KiB disks in use, and a page-aligned buffer covers the memory.
ALIGN = 4096
BLOCK = 1024 * 1024
# Bytes that go through the cache go in writes of at most this much: a write of a MiB makes
# the kernel cache it in large folios, which on such a machine come from the blocks the host
# has taken back (scp's writes are smaller still).
CACHED_STEP = 64 * 1024


class LandingFile:
    """One file, written at offsets by several threads, one write at a time: the kernel
    serialises writes into one file anyway, and a thread waiting for it spins on a core."""

    def __init__(self, path: Path) -> None:
        self.cached = os.open(path, os.O_WRONLY)
        self.direct = _open_direct(path)
        self._writing = threading.Lock()
        # Apart from the writing lock: the loop takes a buffer while a thread writes.
        self._sparing = threading.Lock()
        self._spare: list[mmap.mmap] = []

    def stage(self, start: int) -> Stage:
        """A buffer for the bytes of a piece that starts at offset `start`."""
        with self._sparing:
            buffer = self._spare.pop() if self._spare else mmap.mmap(-1, BLOCK)
        return Stage(self, buffer, start)

    def write(self, view: memoryview, at: int) -> None:
        """`view` at offset `at`; `view` starts at offset `at` of an aligned buffer's MiB, so
        its aligned middle is aligned in memory too."""
        end = at + len(view)
        low = min(end, -(-at // ALIGN) * ALIGN)
        high = max(low, end // ALIGN * ALIGN)
        with self._writing:
            if self.direct is not None and high > low:
                try:
                    _write_all(self.direct, view[low - at : high - at], low)
                except OSError as error:
                    if error.errno != errno.EINVAL:
                        raise
                    # Refused after all (an odd block size): the cache takes the rest.
                    self._drop_direct()
                else:
                    self._cached(view[: low - at], at)
                    self._cached(view[high - at :], high)
                    return
            self._cached(view, at)

    def give_back(self, buffer: mmap.mmap) -> None:
        with self._sparing:
            self._spare.append(buffer)

    def close(self) -> None:
        with self._writing, self._sparing:
            self._drop_direct()
            os.close(self.cached)
            # Unmapped once nothing holds them (a failed write's traceback may hold a view).
            self._spare.clear()

    def _cached(self, view: memoryview, at: int) -> None:
        written = 0
        while written < len(view):
            written += os.pwrite(self.cached, view[written : written + CACHED_STEP], at + written)

    def _drop_direct(self) -> None:
        if self.direct is not None:
            os.close(self.direct)
            self.direct = None


class Stage:
    """One piece's bytes on their way into the file: gathered in a buffer that holds one
    MiB of the file, and written whenever the buffer reaches that MiB's end (or at `flush`).
    `landed` is how far the piece's bytes are in the file."""

    def __init__(self, landing: LandingFile, buffer: mmap.mmap, start: int) -> None:
        self.landing = landing
        self.buffer = buffer
        self.view = memoryview(buffer)
        self.window = start - start % BLOCK  # the offset of the MiB the buffer holds
        self.at = self.landed = start

    def add(self, block: memoryview) -> None:
        taken = 0
        while taken < len(block):
            count = min(len(block) - taken, self.window + BLOCK - self.at)
            into = self.at - self.window
            self.view[into : into + count] = block[taken : taken + count]
            self.at += count
            taken += count
            if self.at == self.window + BLOCK:
                self.flush()

    def flush(self) -> None:
        """Write what the buffer holds."""
        if self.at > self.landed:
            start = self.landed - self.window
            self.landing.write(self.view[start : self.at - self.window], self.landed)
            self.landed = self.at
        if self.at == self.window + BLOCK:
            self.window = self.at

    def close(self) -> None:
        """Give the buffer back; what was not flushed is dropped."""
        self.view.release()
        self.landing.give_back(self.buffer)


def _open_direct(path: Path) -> int | None:
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return None
    with contextlib.suppress(OSError):
        return os.open(path, os.O_WRONLY | flag)
    return None


def _write_all(fd: int, view: memoryview, at: int) -> None:
    written = 0
    while written < len(view):
        written += os.pwrite(fd, view[written:], at + written)
