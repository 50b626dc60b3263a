"""Keeps active runs' states fresh: one batched command per host per interval (watch.sh),
which also brings the runs' new log bytes (for their metrics) and the host's GPU telemetry.

Changes are recorded (and so pushed to subscribers as `run/changed`); a host that cannot
be reached turns its running runs `unknown`, with the reason, until it answers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict

import msgspec

from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import RunInfo

from .operations.context import Ops
from .operations.watch import watch_host

log = logging.getLogger(__name__)


class Monitor:
    def __init__(self, ops: Ops, interval: float) -> None:
        self.ops = ops
        self.interval = interval
        self.polls = 0  # remote status commands sent, for the benchmarks
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    def poke(self) -> None:
        """Refresh now (e.g. after a start), not at the next tick."""
        self._wake.set()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self.interval)
            except TimeoutError:
                pass
            self._wake.clear()
            try:
                await self.poll_once()
            except Exception:  # never let one bad poll end the monitoring
                log.exception("poll failed")

    async def poll_once(self) -> None:
        by_host: dict[str, list[RunInfo]] = defaultdict(list)
        for run in self.ops.registry.active():
            if (run.host, run.run_id) not in self.ops.starting:
                by_host[run.host].append(run)
        await asyncio.gather(*(self._poll_host(host, runs) for host, runs in by_host.items()))

    async def _poll_host(self, host: str, runs: list[RunInfo]) -> None:
        self.polls += 1
        try:
            fresh, moved = await watch_host(self.ops, host, runs)
        except RpcError as error:
            for run in runs:
                if run.state != "unknown" or run.reason != error.message:
                    self.ops.record(
                        msgspec.structs.replace(run, state="unknown", reason=error.message)
                    )
            return
        for old, new in zip(runs, fresh, strict=True):
            if new is None:
                new = msgspec.structs.replace(old, state="lost", reason="the run directory is gone")
            self.ops.record(new, metrics_changed=new.run_id in moved)
