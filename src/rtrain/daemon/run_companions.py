"""What the daemon keeps beside a run from its start: the reverse forwards it asked for
(`reverse`) and the syncs of its tracker files (`sync`), for a run started on a host and for
one a pool places there, now or after it was queued (docs/trackers.md).

A reverse forward is set up before the run is launched, so the trainer's first connection
finds it, and tied to the run once it exists; it ends with the run (reverse_forwards.py). Its
ports are kept in the registry, so a restart or a retry of the run, also by a daemon started
since, sets them up again before its new attempt is launched.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.operations.notifier import Notifier
from rtrain.daemon.operations.start import Prepare
from rtrain.daemon.operations.start_plan import StartPlan
from rtrain.daemon.run_retries import Restart
from rtrain.daemon.trackers.sync import TrackerSyncs
from rtrain.daemon.transports.local_transport import LOCAL_ALIAS
from rtrain.protocol.errors import Kind, RpcError
from rtrain.protocol.messages import (
    ForwardCloseParams,
    ForwardInfo,
    RestartParams,
    RestartResult,
    ReverseForwardParams,
    StartParams,
    StartResult,
)

from .reverse_forwards import ReverseForwards, check_listening_here

log = logging.getLogger(__name__)

# `operations.start.start`, as this class calls it.
StartRun = Callable[[DaemonState, StartParams, Notifier, Prepare | None], Awaitable[StartResult]]

# The trainer's environment names the host's port of each reverse port with this prefix.
VARIABLE = "RTRAIN_REVERSE_PORT_"


class RunCompanions:
    def __init__(
        self,
        start_run: StartRun,
        restart_run: Restart,
        reverse_forwards: ReverseForwards,
        syncs: TrackerSyncs,
    ) -> None:
        self._start_run = start_run
        self._restart_run = restart_run
        self.reverse_forwards = reverse_forwards
        self.syncs = syncs

    async def start(self, ops: DaemonState, p: StartParams, ctx: Notifier) -> StartResult:
        """`start_run` on `p.host` (a host, never a pool), with its reverse forwards open
        from once the start is planned (before anything ships or launches) and its syncs
        watched from its start."""
        reached = Reached()

        async def prepare(plan: StartPlan) -> dict[str, str]:
            reached.add(await self._open_reverse(p.host, {port: None for port in p.reverse}))
            return reached.variables()

        try:
            result = await self._start_run(ops, p, ctx, prepare if p.reverse else None)
        except BaseException:
            await asyncio.shield(self._close(p.host, reached.opened))
            raise
        run = result.run
        if p.reverse:
            ops.registry.set_reverse_ports(run.host, run.run_id, reached.far)
            self.reverse_forwards.tie(run.host, reached.opened, run.run_id)
        if p.sync:
            self.syncs.watch(run, p.sync, p.sync_to)
        return result

    async def restart(
        self, ops: DaemonState, p: RestartParams, cause: str | None = None
    ) -> RestartResult:
        """`restart_run`, with the run's reverse forwards set up again, on the host's ports
        its start got (its recorded environment names them), before its new attempt is
        launched: they ended with the last one. Its syncs go on with the new attempt."""
        ports: dict[int, int | None] = {}
        if not p.dry_run:
            ports.update(ops.registry.reverse_ports(p.host, p.run_id))
        reached = await self._open_reverse(p.host, ports)
        try:
            result = await self._restart_run(ops, p, cause)
        except BaseException:
            await asyncio.shield(self._close(p.host, reached.opened))
            raise
        self.reverse_forwards.tie(p.host, reached.opened, p.run_id)
        if not p.dry_run:
            self.syncs.restarted(p.host, p.run_id)
        return result

    async def _open_reverse(self, host: str, ports: dict[int, int | None]) -> Reached:
        """Open a reverse forward of each port here on `host` (on the far port given, where
        one is and it is free), none tied to a run yet; one the host had already stays as
        it was."""
        for port in ports:
            check_listening_here(port)  # every port first: no ssh for a start refused here
        reached = Reached()
        if host == LOCAL_ALIAS:
            reached.far = {port: port for port in ports}  # reached as they are
            return reached
        try:
            for port, far in ports.items():
                before = {f.remote_port for f in self.reverse_forwards.listed(host)}
                info = await self._open_one(host, port, far)
                reached.far[port] = info.remote_port
                if info.remote_port not in before:
                    reached.opened.append(info.remote_port)
        except BaseException:
            await asyncio.shield(self._close(host, reached.opened))
            raise
        return reached

    async def _open_one(self, host: str, port: int, far: int | None) -> ForwardInfo:
        asked = ReverseForwardParams(host=host, local_port=port, remote_port=far)
        try:
            return await self.reverse_forwards.open(asked)
        except RpcError as error:
            if far is None or error.kind != Kind.PORT_IN_USE:
                raise
            # Taken on the host since: another port, which the run's variable does not name.
            log.warning("%s: port %d taken since the run's start: %s", host, far, error)
            return await self.reverse_forwards.open(ReverseForwardParams(host, port))

    async def _close(self, host: str, far_ports: list[int]) -> None:
        for far in far_ports:
            with contextlib.suppress(RpcError):
                await self.reverse_forwards.close(ForwardCloseParams(host=host, remote_port=far))


@dataclass
class Reached:
    """Where an attempt's processes reach each reverse port on the host."""

    far: dict[int, int] = field(default_factory=dict)  # this machine's port -> the host's
    opened: list[int] = field(default_factory=list)  # far ports opened for this attempt

    def add(self, other: Reached) -> None:
        self.far.update(other.far)
        self.opened += other.opened

    def variables(self) -> dict[str, str]:
        """`RTRAIN_REVERSE_PORT_5000=PORT` for each, in the run's environment: where its
        processes reach this machine's port 5000, when the host had 5000 taken."""
        return {f"{VARIABLE}{here}": str(far) for here, far in self.far.items()}
