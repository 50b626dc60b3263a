"""Channels of one transfer side by side, as many as the host allows.

A host with a low `MaxSessions` refuses a channel once it has that many open; the transport
has then already given up its long-lived shells. A refused piece waits for one of this
transfer's own channels to end and tries again, and the transfer goes on with fewer; only
when no channel of its own is open is the refusal final.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rtrain.daemon.ssh.exec_transport import SessionRefused

T = TypeVar("T")


class Lanes:
    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._active = 0
        self._changed = asyncio.Condition()

    async def run(self, attempt: Callable[[], Awaitable[T]]) -> T:
        while True:
            async with self._changed:
                await self._changed.wait_for(lambda: self._active < self.limit)
                self._active += 1
            try:
                return await attempt()
            except SessionRefused:
                if self._active <= 1:
                    raise
                self.limit = max(1, self._active - 1)
            finally:
                async with self._changed:
                    self._active -= 1
                    self._changed.notify_all()


def first_error(failed: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error to tell of a group of side-by-side tasks: the first one's (it stopped the
    others, which then only say they were cancelled)."""
    error: BaseException = failed
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
