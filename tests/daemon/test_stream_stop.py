"""Stopping a stream that a thread reads (byte_pump.py) never holds up the event loop.

A fetch's piece is stopped (Ctrl-C, another piece that failed) while its thread is still
busy with a block it read: meanwhile the far side fills the pipe behind it. The stop must
wake the thread without writing into that full pipe, or the daemon's loop, and every client
with it, would wait for good (a fetch of a file that changed under it once hung so).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from rtrain.daemon.transports.local_transport import LocalTransport
from tests.operations.processes import argv_pids, parent_of

# Far more than the pipe holds (1 MiB at most), so its writer blocks once nobody reads.
FAR_BYTES = 64 * 1024 * 1024


class EndlessFarSide(LocalTransport):
    """The local transport, with a far side that prints its start markers and then more
    bytes than any pipe holds: a real child process, as a far script's would be."""

    def _argv(self, text: str, args: Sequence[str]) -> list[str]:
        markers = text.split("\n", 1)[0]
        return ["/bin/sh", "-c", f"{markers}; exec head -c {FAR_BYTES} /dev/zero"]


def far_side_blocked_writing() -> bool:
    """Whether the far side, a child of ours, waits to write into a full pipe."""
    for pid in argv_pids(lambda argv: argv[0] == b"head"):
        try:
            if parent_of(pid) == os.getpid() and "pipe_write" in wchan(pid):
                return True
        except (OSError, IndexError):
            continue  # gone meanwhile
    return False


def wchan(pid: int) -> str:
    return Path(f"/proc/{pid}/wchan").read_text()


# A frozen loop stays frozen (the thread, let go, ends, and the pipe fills again): the
# deadline ends such a test.
@pytest.mark.timeout(60)
def test_stopping_a_stream_whose_thread_is_busy_leaves_the_loop_free() -> None:
    asyncio.run(stop_a_stream_whose_thread_is_busy())


async def stop_a_stream_whose_thread_is_busy() -> None:
    inside = threading.Event()
    go_on = threading.Event()

    def slow_sink(block: memoryview) -> None:
        inside.set()
        go_on.wait(60)

    loop_answered = threading.Event()
    frozen: list[bool] = []

    def watchdog() -> None:
        # A loop that runs no callback of ours within 20 s of the stop is frozen; the thread
        # is let go either way.
        if not loop_answered.wait(20):
            frozen.append(True)
        go_on.set()

    reading = asyncio.ensure_future(EndlessFarSide().stream_out_on_thread("send", [], slow_sink))
    try:
        assert await asyncio.to_thread(inside.wait, 30), "no byte reached the sink"
        # The far side fills the pipe behind the thread (a kernel that hides where a process
        # waits gets 5 s, far more than /dev/zero needs to fill a MiB).
        deadline = time.monotonic() + 5
        while not far_side_blocked_writing() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        threading.Thread(target=watchdog, daemon=True).start()
        reading.cancel()
        await asyncio.sleep(0)  # the stop runs: the thread is told to end, and woken
        loop_answered.set()
        done, _ = await asyncio.wait({reading}, timeout=30)
        assert done, "the stream did not end once its thread was let go"
        assert reading.cancelled()
    finally:
        go_on.set()
        reading.cancel()
    assert frozen == [], "the event loop stood still while the stream was stopped"
