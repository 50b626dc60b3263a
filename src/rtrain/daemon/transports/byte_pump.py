"""A stream's bytes moved by a thread of its own, off the event loop.

A large transfer is a few channels, each a pipe to an `ssh` (or `sh`) child. Read and written
by the event loop, each pipe costs a Python callback for every read or write of at most
64 KiB (the pipe's size): on two cores that Python was the daemon's largest cost, more than
its hashing. Here a thread moves each channel's bytes with blocking system calls of up to
1 MiB (`sendfile` from the file into the pipe for an upload; `readv` into one buffer for a
fetch), and `hashlib` and `pwrite` on the same buffer let go of the interpreter lock, so the
loop only hears how far the bytes came.

Stopping: a thread blocked in a write (the far side stopped reading) or waiting for bytes
(nothing comes) is woken by the daemon itself, never left waiting on the far side. `halt`
tells it to stop, then drains the pipe an upload's thread writes (the daemon keeps its own
end of it), or writes a byte into the wake pipe a fetch's thread polls beside its stream.
Never into the stream itself: once the thread has stopped reading, ssh may fill that pipe,
and a write there would hold up the event loop for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLOCK = 1024 * 1024
# A pipe of 1 MiB (the most an unprivileged process may ask for by default): the thread and
# ssh each wake once per MiB, not once per 64 KiB.
PIPE_SIZE = 1024 * 1024
# How often a wait looks at whether bytes still move; a stall is STALL seconds of none.
LOOK_EVERY = 1.0
# How often a halted thread is woken again until it has ended.
WAKE_EVERY = 0.02

Block = memoryview
Tell = Callable[[int], None]


@dataclass(frozen=True)
class FileRange:
    """`length` bytes of local file `path` from `offset` on: what an upload's piece sends."""

    path: Path
    offset: int
    length: int


class PumpStopped(Exception):
    """The pump was halted before its bytes were all moved."""


def widen(fd: int) -> None:
    """Ask for a larger pipe; a kernel that refuses keeps its own size (only slower)."""
    with contextlib.suppress(OSError, AttributeError):
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


class Pump:
    """One thread moving one stream's bytes; the event loop waits for it and may halt it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.moved = 0  # bytes moved so far, written by the thread only
        self.stopped = False  # read by the thread between its blocking calls
        self._loop = asyncio.get_running_loop()
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._thread: threading.Thread | None = None

    def start(self, work: Callable[[Pump], None]) -> None:
        def body() -> None:
            try:
                work(self)
            except BaseException as error:  # handed to the loop, which raises it there
                self._loop.call_soon_threadsafe(_fail, self._done, error)
            else:
                self._loop.call_soon_threadsafe(_succeed, self._done)

        self._thread = threading.Thread(target=body, name=f"rtrain-pump {self.name}", daemon=True)
        self._thread.start()

    def tell(self, told: Tell) -> Tell:
        """`told`, called on the event loop whatever thread calls the result (progress)."""
        loop = self._loop

        def tell_on_loop(count: int) -> None:
            loop.call_soon_threadsafe(told, count)

        return tell_on_loop

    @property
    def done(self) -> asyncio.Future[None]:
        return self._done

    async def finished(self, stall: float) -> None:
        """Wait until the thread has ended (its error, if any, is raised here). TimeoutError
        when no byte moved for `stall` seconds."""
        await self._watch(asyncio.shield(self._done), stall)

    async def watch(self, waited: asyncio.Future[Any], stall: float) -> None:
        """Wait for `waited`; TimeoutError when no byte moved meanwhile for `stall` seconds."""
        await self._watch(waited, stall)

    async def _watch(self, waited: asyncio.Future[Any], stall: float) -> None:
        seen, since = self.moved, self._loop.time()
        while True:
            done, _ = await asyncio.wait({waited}, timeout=min(LOOK_EVERY, stall))
            if done:
                waited.result()
                return
            now = self._loop.time()
            if self.moved != seen:
                seen, since = self.moved, now
            elif now - since >= stall:
                raise TimeoutError

    async def halt(self, wake: Callable[[], None]) -> None:
        """Tell the thread to stop and wake it (`wake`) until it has ended; its error is not
        the news then and is dropped."""
        self.stopped = True
        if self._thread is None:
            return
        while not self._done.done():
            with contextlib.suppress(OSError):
                wake()
            await asyncio.wait({self._done}, timeout=WAKE_EVERY)
        if not self._done.cancelled():
            self._done.exception()  # retrieved: a halted thread's error is not raised


def _succeed(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _fail(future: asyncio.Future[None], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def send_range(source: FileRange, into: int, told: Tell) -> Callable[[Pump], None]:
    """The thread's work for an upload: `source`'s bytes into pipe `into` by `sendfile` (the
    kernel moves them; no byte passes through Python). A file that shrank sends less: the far
    side's hash of the piece tells."""

    def work(pump: Pump) -> None:
        fd = os.open(source.path, os.O_RDONLY)
        try:
            at, end = source.offset, source.offset + source.length
            while at < end:
                if pump.stopped:
                    raise PumpStopped
                count = os.sendfile(into, fd, at, min(BLOCK, end - at))
                if count == 0:
                    return
                at += count
                pump.moved += count
                told(count)
        finally:
            os.close(fd)

    return work


def drain(fd: int) -> None:
    """Empty pipe `fd` (non-blocking) so that a writer blocked on it goes on."""
    os.set_blocking(fd, False)
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, BLOCK):
            pass


class WakePipe:
    """A pipe of the daemon's own that a fetch's thread polls beside its stream: a byte in
    it wakes the thread. Written without blocking: one byte already wakes it."""

    def __init__(self) -> None:
        self.read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self._write, b"\0")

    def close(self) -> None:
        os.close(self.read)
        os.close(self._write)


def receive(
    source: int,
    marker: bytes,
    sink: Callable[[Block], None],
    noise: bytearray,
    keep: int,
    wake: WakePipe,
) -> Callable[[Pump], None]:
    """The thread's work for a fetch: read pipe `source` in blocks of up to 1 MiB, skip what
    comes before `marker` (a login's noise: the first `keep` bytes of it go into `noise`),
    and hand `sink` each block after it (a view valid only during the call). With no marker
    at all (the script never ran), nothing reaches `sink`. It waits for bytes in a poll
    that `wake` ends too."""

    def work(pump: Pump) -> None:
        buffer = bytearray(BLOCK)
        view = memoryview(buffer)
        window = b""
        found = False
        ready = select.poll()
        ready.register(source, select.POLLIN)
        ready.register(wake.read, select.POLLIN)
        while True:
            # Before the marker, each read is looked at as it comes; after it, blocks fill up.
            filled = _fill(pump, ready, source, view, whole=found)
            if pump.stopped:
                raise PumpStopped
            if filled == 0:
                return
            pump.moved += filled
            if found:
                sink(view[:filled])
                continue
            window += bytes(view[:filled])
            at = window.find(marker)
            if at < 0:
                # Keep only what could still hold the start of a marker split across reads.
                cut = max(0, len(window) - len(marker))
                noise.extend(window[: max(0, min(cut, keep - len(noise)))])
                window = window[cut:]
                continue
            noise.extend(window[: max(0, min(at, keep - len(noise)))])
            found = True
            if rest := window[at + len(marker) :]:
                sink(memoryview(rest))
            window = b""

    return work


def _fill(pump: Pump, ready: select.poll, source: int, view: memoryview, *, whole: bool) -> int:
    """Read pipe `source` into `view`: until it is full or the stream ends when `whole`,
    else one read. Waits in `ready`'s poll, which a wake ends too; 0 at the stream's end."""
    filled = 0
    while filled < len(view):
        if pump.stopped:
            raise PumpStopped
        ready.poll()
        if pump.stopped:
            raise PumpStopped
        count = os.readv(source, [view[filled:]])
        if count == 0:
            break
        filled += count
        if not whole:
            break
    return filled
