"""Reverse forwards: a port of this machine's loopback reached from a host's loopback (an MLflow
server or a collector on the laptop, reached by a trainer; `rtrain forward --reverse`).

OpenSSH carries them itself: the host's master is asked for a remote forward (`ssh -O forward
-R`), so the host's sshd listens and every connection comes back over the one connection the
daemon already holds. A remote forward lives as long as that master; a keeper per forward
notices a new master (a drop, a restart, a login) and asks the new one again, on the same far
port, so the address a trainer was given keeps working once the host answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from rtrain.daemon.launchers import registry as launchers
from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.ssh.control_master import ControlMaster
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.ssh.failures import classify
from rtrain.daemon.ssh.options import base_args
from rtrain.daemon.transports.local_transport import LOCAL_ALIAS
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    ForwardCloseParams,
    ForwardInfo,
    ReverseForwardParams,
    RunInfo,
)
from rtrain.protocol.run_states import is_ended

from .forwards import closes, owning_run

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
# How often a keeper looks whether the host's master is still the one its forward was set up
# on: a Unix socket greeting, no round trip to the host.
KEEP_S = 2.0
# An ssh -O request answers from the master's own loop; one that hangs this long never will.
ASK_S = 20.0


@dataclass
class ReverseForward:
    host: str
    local_port: int  # the server's port on this machine
    remote_port: int  # where the host's processes reach it
    run_id: str | None
    since: float
    # The master (by its start time) that carries it now; None while none does.
    carried_by: float | None = None
    keeper: asyncio.Task[None] | None = None
    last_error: str | None = None
    stopping: bool = False
    # The far port as the current master was asked for it: a master keeps a forward under
    # the words it was asked with, and cancels only those (0 for one the host chose).
    asked_as: int | None = None

    def info(self) -> ForwardInfo:
        return ForwardInfo(
            host=self.host,
            remote_port=self.remote_port,
            local_port=self.local_port,
            url=f"http://{LOOPBACK}:{self.remote_port}/",
            since=self.since,
            run_id=self.run_id,
            last_error=self.last_error,
            reverse=True,
        )

    def spec(self, far_port: int) -> str:
        return f"{LOOPBACK}:{far_port}:{LOOPBACK}:{self.local_port}"


class ReverseForwards:
    def __init__(self, ops: DaemonState, changed: Callable[[], None] = lambda: None) -> None:
        self.ops = ops
        self.changed = changed
        self._open: dict[tuple[str, int], ReverseForward] = {}  # by host and far port

    def listed(self, host: str | None = None) -> list[ForwardInfo]:
        return [
            fwd.info() for _, fwd in sorted(self._open.items()) if host is None or fwd.host == host
        ]

    async def open(self, p: ReverseForwardParams) -> ForwardInfo:
        validation.host(p.host)
        run = owning_run(self.ops, p.host, p.run_id)
        if run is not None:
            if is_ended(run.state):
                raise app_error(
                    Kind.RUN_NOT_FOUND,
                    f"Run {p.run_id} on {p.host} has ended ({run.state}); a reverse forward of "
                    "its own would end at once. Leave out --run for one of the host's.",
                )
            launcher = launchers.for_run(run.launcher, self.ops.hosts.config.host(p.host))
            problem = launcher.reverse_forward_problem(p.host, len(run.nodes))
            if problem:
                raise app_error(Kind.INVALID_COMMAND, problem)
        if p.host == LOCAL_ALIAS:
            raise app_error(
                Kind.INVALID_HOST,
                f"The host `local` is this machine: its processes reach port {p.local_port} "
                "as they are, with no forward.",
            )
        for fwd in self._open.values():
            if fwd.host == p.host and fwd.local_port == p.local_port:
                if p.remote_port in (None, fwd.remote_port):
                    return fwd.info()  # asked again: the one already open
        check_listening_here(p.local_port)  # this machine first: nothing reaches the host
        master = await self._master(p.host)
        asked = [p.remote_port] if p.remote_port is not None else [p.local_port, 0]
        opened: ReverseForward | None = None
        for far in asked:
            candidate = ReverseForward(
                p.host, p.local_port, far, p.run_id, time.time(), carried_by=master.started_at
            )
            try:
                candidate.remote_port = await _ask(master, "forward", candidate, far)
                candidate.asked_as = far
            except RpcError as error:
                if error.kind != Kind.PORT_IN_USE or far == asked[-1]:
                    raise
                continue
            opened = candidate
            break
        assert opened is not None
        fwd = opened
        if (fwd.host, fwd.remote_port) in self._open:
            # Two hosts' aliases never share a key; one alias asked twice for one far port
            # got it once: ssh refuses the second bind, so this is the same request again.
            return self._open[(fwd.host, fwd.remote_port)].info()
        self._open[(fwd.host, fwd.remote_port)] = fwd
        fwd.keeper = asyncio.create_task(self._keep(fwd))
        self.changed()
        log.info(
            "%s port %d reaches %s:%d here", fwd.host, fwd.remote_port, LOOPBACK, fwd.local_port
        )
        return fwd.info()

    async def close(self, p: ForwardCloseParams) -> list[ForwardInfo]:
        chosen = [fwd for fwd in self._open.values() if closes(p, fwd.info())]
        closed = [fwd.info() for fwd in chosen]
        await asyncio.gather(*(self._stop(fwd) for fwd in chosen))
        return closed

    def tie(self, host: str, far_ports: list[int], run_id: str) -> None:
        """The forwards of `host` at `far_ports`, opened for a run before its launch, are
        the run's from now: they end with it."""
        for far in far_ports:
            fwd = self._open.get((host, far))
            if fwd is not None:
                fwd.run_id = run_id
        self.changed()

    def run_seen(self, run: RunInfo, removed: bool = False) -> None:
        """A reverse forward of a run ends with the run: once it has ended, or is removed."""
        if not (removed or is_ended(run.state)):
            return
        for fwd in list(self._open.values()):
            if fwd.host == run.host and fwd.run_id == run.run_id:
                asyncio.get_running_loop().create_task(self._stop(fwd))

    async def close_all(self) -> None:
        await asyncio.gather(*(self._stop(fwd) for fwd in list(self._open.values())))

    async def _stop(self, fwd: ReverseForward) -> None:
        if self._open.get((fwd.host, fwd.remote_port)) is not fwd or fwd.stopping:
            return
        fwd.stopping = True
        if fwd.keeper is not None:
            fwd.keeper.cancel()
            await asyncio.gather(fwd.keeper, return_exceptions=True)
        # The far port is let go now, not when the connection next drops (a master that is
        # gone took it with it); listed until then, so an empty list means it is gone.
        master = self.ops.hosts.master(fwd.host)
        if fwd.carried_by is not None and fwd.carried_by == master.started_at:
            try:
                far = fwd.remote_port if fwd.asked_as is None else fwd.asked_as
                await _ask(master, "cancel", fwd, far)
            except RpcError as error:
                log.info("reverse forward of %s port %d: %s", fwd.host, fwd.remote_port, error)
        del self._open[(fwd.host, fwd.remote_port)]
        self.changed()
        log.info("reverse forward of %s port %d ended", fwd.host, fwd.remote_port)

    async def _master(self, host: str) -> ControlMaster:
        transport = await self.ops.transport(host)
        if not isinstance(transport, ExecTransport):
            raise app_error(
                Kind.HOST_NOT_READY,
                f"{host} is reached through a console-only gateway, which carries no port "
                "forwards.",
            )
        return transport.master

    async def _keep(self, fwd: ReverseForward) -> None:
        """Set the forward up again on each new master of its host, for as long as it is
        open: the monitor or any command may have replaced the master, or nothing has and
        the host is away (then this connects, as any command would)."""
        while True:
            await asyncio.sleep(KEEP_S)
            try:
                master = await self._master(fwd.host)
                if master.started_at == fwd.carried_by:
                    continue
                generation = master.started_at
                await _ask(master, "forward", fwd, fwd.remote_port)
            except RpcError as error:
                if error.message != fwd.last_error:
                    fwd.last_error = error.message
                    self.changed()
                log.info("reverse forward of %s port %d: %s", fwd.host, fwd.remote_port, error)
                continue
            fwd.carried_by = generation
            fwd.asked_as = fwd.remote_port
            fwd.last_error = None
            self.changed()
            log.info("reverse forward of %s port %d set up again", fwd.host, fwd.remote_port)


def check_listening_here(port: int) -> None:
    with socket.socket() as probe:
        probe.settimeout(5)
        if probe.connect_ex((LOOPBACK, port)) != 0:
            raise app_error(
                Kind.PORT_NOT_LISTENING,
                f"Nothing answers on port {port} of this machine (127.0.0.1:{port}); start "
                "the server here first, listening on 127.0.0.1 or on all addresses.",
            )


async def _ask(master: ControlMaster, what: str, fwd: ReverseForward, far_port: int) -> int:
    """`ssh -O forward|cancel -R` of `far_port` to the host's master: the far port it
    listens on."""
    proc = await asyncio.create_subprocess_exec(
        "ssh",
        *base_args(master.config),
        "-o",
        f"ControlPath={master.path}",
        "-O",
        what,
        "-R",
        fwd.spec(far_port),
        master.alias,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(ASK_S):
            out, err = await proc.communicate()
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        raise app_error(
            Kind.TIMEOUT, f"{fwd.host}'s ssh connection did not answer a forward in {ASK_S:g} s."
        ) from None
    text = err.decode(errors="replace").strip()
    if proc.returncode != 0:
        if "forwarding failed" in text or "forwarding request failed" in text:
            raise app_error(
                Kind.PORT_IN_USE,
                f"Port {far_port} of {fwd.host} is in use there already, or its sshd "
                "allows no remote forwards (AllowTcpForwarding); choose another with --remote.",
            )
        raise classify(fwd.host, text, proc.returncode or 255, master.config)
    # ssh prints the port the host chose when asked for port 0.
    printed = out.decode(errors="replace").split()
    return int(printed[0]) if far_port == 0 and what == "forward" and printed else far_port
