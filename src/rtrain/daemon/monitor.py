"""Keeps active runs' states fresh: one batched command per host per interval (watch.sh),
which also brings the runs' new log bytes (for their metrics) and the host's GPU telemetry.

Changes are recorded (and so pushed to subscribers as `run/changed`); a host that cannot
be reached turns its running runs `unknown`, with the reason, until it answers again.
Every answer also counts as the host seen up (busy or idle), for what it costs; a host
with a price is polled on while it answers, runs or none (docs/cost-safety.md).
A stop that some nodes of a run across hosts did not answer is asked again each poll until
they do (operations/stop.py). A run that ended before a poll read its files after the end
(another request saw it end first) is read once more, for its last metrics (docs/metrics.md,
"When the daemon reads").
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable

import msgspec

from rtrain.protocol.errors import RpcError
from rtrain.protocol.messages import RunInfo, StopParams
from rtrain.protocol.run_states import HostSilent, Vanished, is_ended, is_live, next_state

from .operations.context import DaemonState
from .operations.status import refresh
from .operations.stop import stop as stop_run
from .operations.watch import watch_host
from .registry import PendingStop

log = logging.getLogger(__name__)
# Two answers of a host further apart than this (or than three polls) are two spans of
# uptime: in between, rtrain did not see it up (the daemon was away, the host did not answer).
UPTIME_GAP = 60.0


class Monitor:
    def __init__(self, ops: DaemonState, interval: float) -> None:
        self.ops = ops
        self.interval = interval
        # Called after every poll (the pools place their queued runs as GPUs free).
        self.after_poll: Callable[[], None] = lambda: None
        self.polls = 0  # remote status commands sent, for the benchmarks
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Stops being finished on nodes that did not answer before, by (host, run id).
        self._stopping: dict[tuple[str, str], asyncio.Task[None]] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    def poke(self) -> None:
        """Refresh now (e.g. after a start), not at the next tick."""
        self._wake.set()

    async def close(self) -> None:
        tasks = [t for t in (self._task, *self._stopping.values()) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

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
            try:
                self.after_poll()
            except Exception:
                log.exception("after the poll")

    def _finish_stop(self, key: tuple[str, str], pending: PendingStop) -> None:
        """Ask again for a stop some nodes of a run did not answer (operations/stop.py);
        in a task of its own, so a node that is still away never holds up the polls."""
        if key in self._stopping:
            return
        host, run_id = key

        async def again() -> None:
            try:
                await stop_run(
                    self.ops,
                    StopParams(host=host, run_id=run_id, grace=pending.grace, force=pending.force),
                )
                log.info("the pending stop of %s/%s is done", host, run_id)
            except RpcError as error:
                log.info("the stop of %s/%s is still pending: %s", host, run_id, error.message)
            finally:
                self._stopping.pop(key, None)

        self._stopping[key] = asyncio.create_task(again())

    @property
    def uptime_gap(self) -> float:
        return max(UPTIME_GAP, 3 * self.interval)

    async def poll_once(self) -> None:
        by_host: dict[str, list[RunInfo]] = defaultdict(list)
        active = self.ops.registry.active()
        pending = self.ops.registry.pending_stops()
        for key, stop in pending.items():
            self._finish_stop(key, stop)
        for run in active:
            if run.host.startswith("@"):
                continue  # a run of a pool that no host holds yet (daemon/pools/)
            key = (run.host, run.run_id)
            # A run with a stop pending: the stop itself, finished, says how it stands.
            if key not in self.ops.starting and key not in pending:
                by_host[run.host].append(run)
        ended = self._ended_unread({(run.host, run.run_id) for run in active})
        for run in ended:
            by_host.setdefault(run.host, [])
        for host in self._priced_hosts_up():
            by_host.setdefault(host, [])
        await asyncio.gather(
            *(
                self._poll_host(host, runs, [run for run in ended if run.host == host])
                for host, runs in by_host.items()
            )
        )

    def _ended_unread(self, active: set[tuple[str, str]]) -> list[RunInfo]:
        """Runs whose metrics were read while they ran, not since they ended."""
        found = []
        for host, run_id in self.ops.metrics.unfinished():
            if (host, run_id) in active or (host, run_id) in self.ops.starting:
                continue
            run = self.ops.known(host, run_id)
            if run is None:
                self.ops.metrics.give_up(host, run_id)  # not a run of this registry
            elif is_ended(run.state):
                found.append(run)
        return found

    def _priced_hosts_up(self) -> list[str]:
        """Hosts with a price that answered lately, or whose connection is up: what they
        cost idle is counted too, so they are polled with no run."""
        at = time.time()
        hosts = []
        for alias in {*self.ops.registry.hosts(), *self.ops.hosts.config.hosts}:
            if self.ops.price(alias) is None:
                continue
            last = self.ops.registry.host_uptime(alias)[2]
            if self.ops.hosts.connected(alias) or (
                last is not None and at - last <= self.uptime_gap
            ):
                hosts.append(alias)
        return hosts

    async def _look_again(self, host: str, vanished: list[RunInfo]) -> list[RunInfo]:
        """Runs whose directory the poll found gone, asked about once more: a run is lost
        only when the second look finds it gone too (protocol/run_states.py). Those still
        there are recorded as that look says; a host that stops answering decides nothing
        (the next poll looks again)."""
        if not vanished:
            return []
        try:
            again = await refresh(self.ops, host, vanished)
        except RpcError:
            return []
        recorded = []
        for old, new in zip(vanished, again, strict=True):
            if new is None:
                state = next_state(Vanished(looks=2))
                if state is None:
                    continue
                new = msgspec.structs.replace(old, state=state, reason="the run directory is gone")
            recorded.append(self.ops.record(new))
        return recorded

    async def _poll_host(self, host: str, runs: list[RunInfo], ended: list[RunInfo]) -> None:
        self.polls += 1
        try:
            fresh, moved = await watch_host(self.ops, host, runs + ended)
        except RpcError as error:
            for run in ended:
                self.ops.metrics.final_read_failed(host, run.run_id)
            state = next_state(HostSilent())
            for run in runs:
                if self.ops.registry.pending_stop(host, run.run_id) is not None:
                    continue  # a stop recorded while this poll was under way says more
                if run.state != state or run.reason != error.message:
                    self.ops.record(msgspec.structs.replace(run, state=state, reason=error.message))
            return
        busy = any(h == host for h, _ in self.ops.starting)
        for run in ended:
            now_known = self.ops.known(host, run.run_id)
            if run.run_id in moved and now_known is not None:
                self.ops.publish(self.ops.annotate(now_known))  # its state stands; its metrics grew
        vanished = []
        for old, new in zip(runs, fresh[: len(runs)], strict=True):
            now_known = self.ops.known(host, old.run_id)
            if now_known is not None and now_known.last_seen != old.last_seen:
                # A fresher look (a status, a stop, a restart) recorded the run while this
                # poll was under way: its verdict is older, and would undo that one's.
                busy = busy or is_live(now_known.state)
                continue
            if new is None:
                vanished.append(old)
                continue
            self.ops.record(new, metrics_changed=new.run_id in moved)
            busy = busy or is_live(new.state)
        for run in await self._look_again(host, vanished):
            busy = busy or is_live(run.state)
        self.ops.registry.saw_host(host, time.time(), idle=not busy, gap=self.uptime_gap)
