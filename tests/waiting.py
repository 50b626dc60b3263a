"""Waiting for an event, never for a fixed time: a check polled until it holds, or the test
fails after a deadline that only a broken test reaches."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# Only against hangs; a healthy wait ends far sooner, even on a loaded machine.
WAIT_S = 60.0


def wait_until(what: str, check: Callable[[], T], timeout: float = WAIT_S) -> T:
    """`check()`'s first true value; fails, naming `what`, when none comes within `timeout`."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return value
