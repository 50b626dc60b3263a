"""`run/wait`: answer once a run has ended, or reached a state (`rtrain wait`, docs/cli.md).

The wait asks the host once (as `run/status` does) and then listens to what the daemon
publishes anyway (every recorded change, from the monitor's polls or any request): no poll
of its own. A host that does not answer leaves its runs `unknown`, which is no ending, so a
wait outlives a dropped connection and goes on with the host's next answer.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

from rtrain.protocol import validation
from rtrain.protocol.messages import RunInfo, RunRef, WaitOutcome, WaitParams, WaitResult
from rtrain.protocol.run_states import is_ended

from .operations.context import DaemonState
from .operations.status import status

Seen = tuple[RunInfo, bool]  # the run as published, and whether it was removed


class RunWaits:
    def __init__(self, ops: DaemonState) -> None:
        self.ops = ops
        self._waiting: dict[tuple[str, str], list[asyncio.Queue[Seen]]] = defaultdict(list)

    def seen(self, run: RunInfo, removed: bool = False) -> None:
        """Every published change of a run (wiring's publish) comes here."""
        for queue in self._waiting.get((run.host, run.run_id), ()):
            queue.put_nowait((run, removed))

    async def wait(self, p: WaitParams) -> WaitResult:
        validation.host(p.host)
        validation.run_id(p.run_id)
        if p.workdir is not None:
            validation.workdir(p.workdir)
        key = (p.host, p.run_id)
        queue: asyncio.Queue[Seen] = asyncio.Queue()
        # Listening before asking: a change between the answer and the wait is not missed.
        self._waiting[key].append(queue)
        try:
            deadline = None if p.timeout is None else time.monotonic() + p.timeout
            run = (await status(self.ops, RunRef(p.host, p.run_id, p.workdir))).run
            removed = False
            while True:
                outcome = _outcome(run, p.until, removed)
                if outcome is not None:
                    return WaitResult(run=self.ops.annotate(run), outcome=outcome)
                left = None if deadline is None else deadline - time.monotonic()
                try:
                    async with asyncio.timeout(left):
                        run, removed = await queue.get()
                except TimeoutError:
                    return WaitResult(run=self.ops.annotate(run), outcome="timeout")
        finally:
            self._waiting[key].remove(queue)
            if not self._waiting[key]:
                del self._waiting[key]


def _outcome(run: RunInfo, until: str | None, removed: bool) -> WaitOutcome | None:
    if removed:
        return "removed"
    if until is not None and run.state == until:
        return "reached"
    if is_ended(run.state):
        return "ended"
    return None
