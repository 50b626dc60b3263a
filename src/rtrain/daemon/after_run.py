"""After a run: bring its results home, verified, and only then terminate the host
(`start --then-fetch PATH --then-terminate`).

The plan lives in the registry beside the run, stage by stage, so a daemon that dies between
the run's end and the fetch (or mid-fetch: the fetch resumes from its verified pieces) picks
it up where it was once it is back. The monitor tells of the run's end (`seen`); nothing here
polls the host on its own. Nothing is terminated after a run that did not complete, or a
fetch that failed or could not be verified; and never while another run on the host is
active: the plan waits for it, and says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.fetch import fetch
from rtrain.daemon.ssh.failures import answer_may_be_lost
from rtrain.protocol.errors import Kind, RpcError
from rtrain.protocol.messages import AfterRun, FetchParams, RunInfo, TerminateResult
from rtrain.protocol.run_states import is_ended

log = logging.getLogger(__name__)

# Runs the host's terminate command (operations/terminate.py); raises RpcError, `host_busy`
# while a run or a transfer is live there.
Terminate = Callable[[str], Awaitable[TerminateResult]]
# The longest wait before asking again, when the host is away or busy; any run's change
# (another run ending, say) ends the wait sooner.
RETRY_S = 15.0
# A host away this many times in a row ends the plan (the far-side guard remains the net).
MOST_TRIES = 40


class _Quiet:
    """The fetch's progress goes to no client: the run's `after.detail` tells instead."""

    def notify(self, method: str, params: Any) -> None:
        pass


class AfterRuns:
    def __init__(self, ops: DaemonState, terminate: Terminate, retry_s: float = RETRY_S) -> None:
        self.ops = ops
        self.terminate = terminate
        self.retry_s = retry_s
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._changed = asyncio.Event()  # set, and replaced, at every run's change

    def start(self) -> None:
        """Go on with every plan a former daemon left unfinished."""
        for host, run_id, _plan in self.ops.registry.unfinished_after_runs():
            self._kick(host, run_id)

    def seen(self, run: RunInfo) -> None:
        """A run changed: once it has ended, its plan (if any) goes on; plans waiting for
        their host's other runs look again."""
        self._changed.set()
        self._changed = asyncio.Event()
        if is_ended(run.state) and run.after is not None and run.after.stage == "waiting":
            self._kick(run.host, run.run_id)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _pause(self) -> None:
        """Until a run changes, or RETRY_S at most."""
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), self.retry_s)

    def _kick(self, host: str, run_id: str) -> None:
        key = (host, run_id)
        if key not in self._tasks:
            task = asyncio.create_task(self._drive(host, run_id))
            self._tasks[key] = task
            task.add_done_callback(lambda _t: self._tasks.pop(key, None))

    async def _drive(self, host: str, run_id: str) -> None:
        tries = 0
        while True:
            run = self.ops.registry.get(host, run_id)
            if run is None or run.after is None or run.after.stage in ("done", "failed"):
                return  # removed meanwhile, or nothing (more) to do
            if not is_ended(run.state):
                return  # the monitor tells of its end (`seen`)
            try:
                if not await self._step(run, run.after):
                    return
                tries = 0
            except RpcError as error:
                tries += 1
                if answer_may_be_lost(error) and tries < MOST_TRIES:
                    self._say(run, self._latest(run), detail=f"{error.message}; trying again")
                    await asyncio.sleep(self.retry_s)
                    continue
                self._give_up(run, self._latest(run), error.message)
                return
            except Exception as error:  # an unforeseen failure must not end the daemon
                log.exception("after run %s on %s", run_id, host)
                self._give_up(run, self._latest(run), f"{type(error).__name__}: {error}")
                return

    def _latest(self, run: RunInfo) -> AfterRun:
        """The plan as last recorded (a step may have moved it on before it failed)."""
        fresh = self.ops.registry.get(run.host, run.run_id)
        if fresh is not None and fresh.after is not None:
            return fresh.after
        assert run.after is not None  # _drive steps only runs with a plan
        return run.after

    async def _step(self, run: RunInfo, plan: AfterRun) -> bool:
        """Take the plan one stage further; False once it is over."""
        host = run.host
        if run.state != "completed":
            ended = {
                "failed": f"failed (exit {run.exit_code})",
                "stopped": "was stopped",
                "lost": "was lost",
            }.get(run.state, run.state)
            self._say(
                run,
                plan,
                stage="failed",
                detail=f"the run {ended}: nothing fetched"
                + (f", {host} not terminated" if plan.terminate else ""),
            )
            return False
        if plan.fetch is not None and plan.into is not None and plan.fetched_files is None:
            path, into = plan.fetch, plan.into
            plan = self._say(run, plan, stage="fetching", detail=f"fetching {path}")
            params = FetchParams(host=host, run_id=run.run_id, path=path, dest=into)
            got = await fetch(self.ops, params, _Quiet())
            plan = msgspec.structs.replace(
                plan, fetched_files=len(got.files), fetched_bytes=got.total_bytes
            )
            if not plan.terminate:
                self._say(run, plan, stage="done", detail=_fetched(plan))
                return False
            plan = self._say(run, plan, stage="terminating", detail=_fetched(plan))
        if not plan.terminate:
            self._say(run, plan, stage="done", detail=_fetched(plan) or "nothing to do")
            return False
        busy = [
            other.run_id
            for other in self.ops.registry.active()
            if other.host == host and other.run_id != run.run_id
        ]
        if busy:
            self._say(
                run,
                plan,
                stage="waiting",
                detail=f"waiting for {', '.join(busy)} before terminating",
            )
            await self._pause()
            return True
        self._say(run, plan, stage="terminating", detail=f"terminating {host}")
        try:
            result = await self.terminate(host)
        except RpcError as error:
            if error.kind != Kind.HOST_BUSY:
                raise  # the command did not start: asked again while the host is away
            self._say(run, plan, stage="waiting", detail=f"{error.message}; waiting")
            await asyncio.sleep(self.retry_s)
            return True
        fetched = _fetched(plan)
        if result.outcome == "ended" and result.exit_code != 0:
            last = f" ({result.output[-1]})" if result.output else ""
            self._say(
                run,
                plan,
                stage="failed",
                detail=(f"{fetched}; " if fetched else "")
                + f"{host}'s terminate command exited {result.exit_code}{last}: "
                f"it may still be billing",
            )
            return False
        terminated = {
            "ended": f"{host} terminated",
            # A host going down takes the connection with it.
            "disconnected": f"terminate sent to {host}, which then stopped answering",
            "running": f"{host}'s terminate command still runs (see its guard log)",
        }[result.outcome]
        self._say(
            run,
            plan,
            stage="done",
            detail=f"{fetched}; {terminated}" if fetched else terminated,
            terminated_at=time.time(),
        )
        return False

    def _give_up(self, run: RunInfo, plan: AfterRun, why: str) -> None:
        # Only a fetch that has not happened can have failed; terminate comes after it.
        what = "terminating" if plan.fetched_files is not None or plan.fetch is None else "fetch"
        tail = f"; {run.host} not terminated" if plan.terminate else ""
        self._say(run, plan, stage="failed", detail=f"{what} failed: {why}{tail}")

    def _say(self, run: RunInfo, plan: AfterRun, **changes: Any) -> AfterRun:
        """Record the plan's new stage and tell subscribers (`run/changed`)."""
        before = plan
        plan = msgspec.structs.replace(plan, **changes)
        if plan == before:
            return plan  # nothing new to tell
        self.ops.registry.set_after_run(run.host, run.run_id, plan)
        fresh = self.ops.registry.get(run.host, run.run_id)
        if fresh is not None:
            self.ops.publish(self.ops.metrics.annotate(fresh))
        return plan


def _fetched(plan: AfterRun) -> str:
    """What the plan's fetch brought home; empty before it did."""
    if plan.fetched_files is None:
        return ""
    return (
        f"fetched {plan.fetch} into {plan.into}: {plan.fetched_files} file(s), "
        f"{plan.fetched_bytes} bytes, every sha256 checked"
    )
