"""The daemon's own state and its own methods (lifecycle, `daemon/*`, `runs/list`).

Operations on runs live in `operations/`; the method table naming every handler, these
included, is `wiring.py`'s.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from rtrain.protocol import daemon_process
from rtrain.protocol import messages as m
from rtrain.protocol.methods import REQUESTS, SERVER_NOTIFICATIONS
from rtrain.protocol.version import PROTOCOL_VERSION, RTRAIN_VERSION

from .client_session import ClientSession, Handler, RequestContext
from .registry import Registry

log = logging.getLogger(__name__)


class Service:
    def __init__(
        self,
        socket_path: Path,
        runtime_dir: Path,
        state_dir: Path,
        log_path: Path,
        registry: Registry,
    ) -> None:
        self.socket_path = socket_path
        self.runtime_dir = runtime_dir
        # Seconds between refreshes of active runs; RTRAIN_POLL_INTERVAL overrides the config.
        interval = os.environ.get("RTRAIN_POLL_INTERVAL")
        self.poll_interval = float(interval) if interval else None
        # Adds what a run's log said (progress, latest values) to it; set by wiring.
        self.annotate: Callable[[m.RunInfo], m.RunInfo] = lambda run: run
        self.state_dir = state_dir
        self.log_path = log_path
        self.registry = registry
        self.started = time.monotonic()
        self.stop_requested = asyncio.Event()
        self.sessions: set[ClientSession] = set()
        self.settings = daemon_process.settings(os.environ)
        # Start-up notices: said once to the first client, and in every `daemon/info`.
        self.notices: list[str] = []
        self._notices_told = False
        # Every method's handler; filled in once by wiring.wire_operations.
        self.handlers: dict[str, Handler] = {}

    def dispatch(self, method: str) -> Handler | None:
        return self.handlers.get(method)

    # ---- broadcast ------------------------------------------------------------------

    def publish_run(self, run: m.RunInfo, removed: bool = False) -> None:
        """Tell every subscribed client that `run` changed (or, `removed`, is gone)."""
        for session in list(self.sessions):
            if session.subscribed:
                session.notify("run/changed", m.RunChanged(run=run, removed=removed))

    # ---- lifecycle and daemon methods -----------------------------------------------

    async def initialize(
        self, params: m.InitializeParams, ctx: RequestContext
    ) -> m.InitializeResult:
        return m.InitializeResult(
            protocol_version=PROTOCOL_VERSION,
            server_info=m.ServerInfo(name="rtrain", version=RTRAIN_VERSION),
            capabilities=m.ServerCapabilities(methods=REQUESTS, notifications=SERVER_NOTIFICATIONS),
            notices=self._untold_notices(),
            settings=self.settings,
        )

    def _untold_notices(self) -> list[str]:
        if self._notices_told:
            return []
        self._notices_told = bool(self.notices)
        return list(self.notices)

    async def shutdown(self, params: m.Empty, ctx: RequestContext) -> None:
        return None

    async def info(self, params: m.Empty, ctx: RequestContext) -> m.DaemonInfo:
        return m.DaemonInfo(
            pid=os.getpid(),
            version=RTRAIN_VERSION,
            protocol_version=PROTOCOL_VERSION,
            uptime=round(time.monotonic() - self.started, 3),
            socket_path=str(self.socket_path),
            state_dir=str(self.state_dir),
            log_path=str(self.log_path),
            clients=len(self.sessions),
            notices=list(self.notices),
            settings=self.settings,
        )

    async def stop_daemon(self, params: m.Empty, ctx: RequestContext) -> m.StopDaemonResult:
        log.info("stop requested by client %s", ctx.session.id)
        # Answer first; the main loop stops once the answer had a moment to go out.
        asyncio.get_running_loop().call_later(0.05, self.stop_requested.set)
        return m.StopDaemonResult()

    async def runs_list(self, params: m.RunsListParams, ctx: RequestContext) -> m.RunsListResult:
        if params.subscribe:
            ctx.session.subscribed = True
        runs = self.registry.list(params.host, params.state)
        # Runs queued in a pool (host @NAME) until a host of it takes them (daemon/pools/).
        runs += [
            run
            for run, _ in self.registry.queued()
            if params.host in (None, run.host) and params.state in (None, run.state)
        ]
        if params.sweep is not None:
            runs = [run for run in runs if run.sweep == params.sweep]
        return m.RunsListResult(runs=[self.annotate(run) for run in runs])
