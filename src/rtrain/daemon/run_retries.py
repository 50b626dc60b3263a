"""Runs that come back: a run started with `--retry N` (or on a host whose config.toml sets
`retry`) that ends `lost` (its processes vanished without a status: a pod restarted, the
session was OOM-killed, the host rebooted) is started again by the daemon itself, as
`restart` would: its recorded command in its own run directory, as the next attempt, so a
trainer that checkpoints there resumes. Up to N times, after a back-off that doubles.

Never for a run a person stopped or a limit stopped (`stopped`), nor for one that failed with
its own exit code unless its policy says `failed`. The daemon sees a run end when it polls
its host: a host that is away (the laptop closed, the pod down) is retried once the daemon
next reaches it and finds the run gone (docs/retry.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import msgspec

from rtrain.daemon.operations.context import DaemonState
from rtrain.protocol.errors import Kind, RpcError
from rtrain.protocol.messages import RestartParams, RestartResult, RunInfo
from rtrain.protocol.run_states import ending_of, is_retried

log = logging.getLogger(__name__)

Restart = Callable[[DaemonState, RestartParams, str | None], Awaitable[RestartResult]]


def due(run: RunInfo) -> bool:
    """Whether `run` ended in a way its retry policy retries, with a retry left."""
    policy = run.retry
    if policy is None or policy.used >= policy.limit:
        return False
    # A run recorded before endings were (its `ending` empty) ends as its state says.
    return is_retried(ending_of(run.state, run.ending), policy.on)


class Retrier:
    def __init__(self, ops: DaemonState, restart: Restart, poke: Callable[[], None]) -> None:
        self.ops = ops
        self.restart = restart
        self.poke = poke
        # (host, run id, attempt) whose end was taken up already, and the waits under way.
        self._taken: set[tuple[str, str, int]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def seen(self, run: RunInfo) -> None:
        """A run changed (`DaemonState.record` published it): start its next attempt when due."""
        if not due(run):
            return
        key = (run.host, run.run_id, _attempt(run))
        if key in self._taken:
            return
        self._taken.add(key)
        task = asyncio.get_running_loop().create_task(self._retry(run, key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def resume(self) -> None:
        """At daemon start: runs that ended due while no daemon ran (or before it retried)."""
        for run in self.ops.registry.list():
            self.seen(run)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _retry(self, ended: RunInfo, key: tuple[str, str, int]) -> None:
        policy = ended.retry
        assert policy is not None
        await asyncio.sleep(policy.backoff * 2**policy.used)
        run = self.ops.known(ended.host, ended.run_id)
        if run is None or not due(run) or _attempt(run) != key[2]:
            return  # removed, restarted by hand, or no longer due meanwhile
        assert run.retry is not None
        used = run.retry.used + 1
        # Counted before the attempt starts: a daemon that dies meanwhile never retries more.
        self.ops.record(
            msgspec.structs.replace(run, retry=msgspec.structs.replace(run.retry, used=used))
        )
        why = run.reason or run.scheduler_state or "its processes vanished"
        cause = f"retry {used} of {run.retry.limit}: attempt {key[2]} ended {run.state} ({why})"
        try:
            result = await self.restart(
                self.ops, RestartParams(host=run.host, run_id=run.run_id), cause
            )
        except RpcError as error:
            log.warning("retry of %s/%s: %s", run.host, run.run_id, error.message)
            now = self.ops.known(run.host, run.run_id) or run
            if error.kind == Kind.HOST_UNREACHABLE or now.state == "unknown":
                # The host is away again: not a retry spent; the next time the daemon sees
                # the run gone, it tries again.
                self._taken.discard(key)
                assert now.retry is not None
                unspent = msgspec.structs.replace(now.retry, used=used - 1)
                self.ops.record(msgspec.structs.replace(now, retry=unspent))
                return
            self.ops.record(
                msgspec.structs.replace(
                    now, reason=f"{why}; the retry did not start: {error.message}"
                )
            )
            return
        log.info("retry of %s/%s: attempt %d started", run.host, run.run_id, result.attempt)
        self.poke()


def _attempt(run: RunInfo) -> int:
    return run.attempts[-1].number if run.attempts else 1
