"""Port forwards: a port on this machine's loopback carried to a port on a host's loopback,
over the host's own ControlMaster (`rtrain forward`, docs/cli.md).

The daemon listens itself and, for each connection it accepts, opens one stdio channel
through the host's master (`ssh -W 127.0.0.1:PORT`), handing ssh the accepted socket as its
stdin and stdout: a mux client passes both descriptors to the master, which then carries the
bytes, so the daemon copies none. Because the listening socket is the daemon's, a forward
outlives a dropped connection: the next connection to it brings up a new master, as any
operation would, and goes through that one. Forwards live as long as the daemon and are not
recorded; a forward that belongs to a run ends when the run is removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rtrain.daemon.operations.context import DaemonState
from rtrain.daemon.ssh.control_master import ControlMaster
from rtrain.daemon.ssh.exec_transport import ExecTransport
from rtrain.daemon.ssh.failures import classify
from rtrain.daemon.transports.local_transport import LOCAL_ALIAS, LocalTransport
from rtrain.protocol import validation
from rtrain.protocol.errors import Kind, RpcError, app_error
from rtrain.protocol.messages import (
    ForwardCloseParams,
    ForwardInfo,
    ForwardParams,
    RunInfo,
)

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
# A refused channel is answered within a round trip; an accepted one says nothing until the
# far server does (a web server waits for a request), so a probe still open this long
# reached something that listens.
PROBE_S = 5.0


@dataclass
class Forward:
    host: str
    remote_port: int
    local_port: int
    run_id: str | None
    since: float
    listener: socket.socket
    accepting: asyncio.Task[None] | None = None
    carried: set[asyncio.Task[None]] = field(default_factory=set)
    last_error: str | None = None

    def info(self) -> ForwardInfo:
        return ForwardInfo(
            host=self.host,
            remote_port=self.remote_port,
            local_port=self.local_port,
            url=f"http://{LOOPBACK}:{self.local_port}/",
            since=self.since,
            run_id=self.run_id,
            connections=len(self.carried),
            last_error=self.last_error,
        )


class Forwards:
    def __init__(self, ops: DaemonState, changed: Callable[[], None] = lambda: None) -> None:
        self.ops = ops
        # Called after a forward opened or ended (`forwards/changed` to subscribers).
        self.changed = changed
        self._open: dict[int, Forward] = {}  # by local port

    def listed(self, host: str | None = None) -> list[ForwardInfo]:
        return [
            fwd.info() for _, fwd in sorted(self._open.items()) if host is None or fwd.host == host
        ]

    async def open(self, p: ForwardParams) -> ForwardInfo:
        validation.host(p.host)
        owning_run(self.ops, p.host, p.run_id)
        for fwd in self._open.values():
            if fwd.host == p.host and fwd.remote_port == p.remote_port:
                if p.local_port in (None, fwd.local_port):
                    return fwd.info()  # asked again: the one already open
        if p.local_port is not None and p.local_port in self._open:
            taken = self._open[p.local_port]
            raise app_error(
                Kind.PORT_IN_USE,
                f"Port {p.local_port} of this machine already forwards to port "
                f"{taken.remote_port} of {taken.host}; choose another with --local.",
            )
        # This machine first: a busy port is refused before anything reaches the host. The
        # socket listens only after the probe, which must never reach it (`local`, or a host
        # that is this machine, has the far port on this very loopback).
        listener = _bind(p.local_port, None if p.host == LOCAL_ALIAS else p.remote_port)
        try:
            await self._probe(p.host, p.remote_port)
            listener = _listen(listener, p.local_port)
        except BaseException:
            listener.close()
            raise
        fwd = Forward(
            host=p.host,
            remote_port=p.remote_port,
            local_port=listener.getsockname()[1],
            run_id=p.run_id,
            since=time.time(),
            listener=listener,
        )
        fwd.accepting = asyncio.create_task(self._accept(fwd))
        self._open[fwd.local_port] = fwd
        self.changed()
        log.info("forwarding %s:%d to %s port %d", LOOPBACK, fwd.local_port, p.host, p.remote_port)
        return fwd.info()

    async def close(self, p: ForwardCloseParams) -> list[ForwardInfo]:
        if p.host is not None:
            validation.host(p.host)
        chosen = [fwd for fwd in self._open.values() if closes(p, fwd.info())]
        closed = [fwd.info() for fwd in chosen]
        await asyncio.gather(*(self._stop(fwd) for fwd in chosen))
        return closed

    def run_removed(self, run: RunInfo) -> None:
        """The run is gone (`rtrain rm`): so are the forwards that belong to it."""
        for fwd in list(self._open.values()):
            if fwd.host == run.host and fwd.run_id == run.run_id:
                asyncio.get_running_loop().create_task(self._stop(fwd))

    async def close_all(self) -> None:
        await asyncio.gather(*(self._stop(fwd) for fwd in list(self._open.values())))

    async def _stop(self, fwd: Forward) -> None:
        if self._open.get(fwd.local_port) is fwd:
            del self._open[fwd.local_port]
            self.changed()
            log.info("forward %s:%d to %s ended", LOOPBACK, fwd.local_port, fwd.host)
        tasks = [*fwd.carried, *([fwd.accepting] if fwd.accepting else [])]
        for task in tasks:
            task.cancel()
        fwd.listener.close()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ---- the host's side ----------------------------------------------------------

    async def _probe(self, host: str, port: int) -> None:
        """Refuse a forward to a port nothing listens on, with one sentence."""
        transport = await self.ops.transport(host)
        if isinstance(transport, LocalTransport):
            try:
                _, writer = await asyncio.open_connection(LOOPBACK, port)
            except OSError:
                raise _not_listening(host, port) from None
            writer.close()
            return
        if not isinstance(transport, ExecTransport):
            raise app_error(
                Kind.HOST_NOT_READY,
                f"{host} is reached through a console-only gateway, which carries no port "
                "forwards.",
            )
        master = transport.master
        proc = await asyncio.create_subprocess_exec(
            *channel_argv(master, port),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            async with asyncio.timeout(PROBE_S):
                _, err = await proc.communicate()
        except TimeoutError:
            return  # open, and the far server waits for a word
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        if proc.returncode == 0:
            return
        text = err.decode(errors="replace")
        if "forwarding request failed" in text or "open failed" in text:
            raise _not_listening(host, port)
        raise classify(host, text, proc.returncode, master.config)

    async def _accept(self, fwd: Forward) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(fwd.listener)
            except OSError as error:
                if fwd.listener.fileno() < 0:
                    return
                log.warning("forward %d: accept failed: %s", fwd.local_port, error)
                await asyncio.sleep(0.5)  # out of descriptors: let some close
                continue
            task = asyncio.create_task(self._carry(fwd, conn))
            fwd.carried.add(task)
            task.add_done_callback(fwd.carried.discard)

    async def _carry(self, fwd: Forward, conn: socket.socket) -> None:
        """One connection, to its end. The host's connection is (re)made here, so a forward
        works again as soon as the host answers again after a drop."""
        with conn:
            try:
                transport = await self.ops.transport(fwd.host)
            except RpcError as error:
                fwd.last_error = error.message
                log.info("forward %d: %s", fwd.local_port, error.message)
                return
            if isinstance(transport, LocalTransport):
                await _splice_local(conn, fwd.remote_port)
                return
            assert isinstance(transport, ExecTransport)  # checked when it was opened
            master = transport.master
            try:
                proc = await asyncio.create_subprocess_exec(
                    *channel_argv(master, fwd.remote_port),
                    stdin=conn.fileno(),
                    stdout=conn.fileno(),
                    stderr=asyncio.subprocess.PIPE,
                )
            except OSError as error:  # out of processes or descriptors, for now
                fwd.last_error = f"ssh could not start: {error.strerror}"
                log.warning("forward %d: %s", fwd.local_port, fwd.last_error)
                return
        # ssh (and through it the master) holds the connection now; ours is closed.
        try:
            _, err = await proc.communicate()
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                with contextlib.suppress(asyncio.CancelledError):
                    await proc.wait()
        if proc.returncode == 0:
            fwd.last_error = None
            return
        text = err.decode(errors="replace").strip()
        if "forwarding request failed" in text or "open failed" in text:
            fwd.last_error = _not_listening(fwd.host, fwd.remote_port).message
        elif text:
            fwd.last_error = classify(fwd.host, text, proc.returncode, master.config).message
        if fwd.last_error:
            log.info("forward %d: %s", fwd.local_port, fwd.last_error)


def owning_run(ops: DaemonState, host: str, run_id: str | None) -> RunInfo | None:
    """The run a forward is to belong to (None for none): one the registry knows."""
    if run_id is None:
        return None
    validation.run_id(run_id)
    run = ops.known(host, run_id)
    if run is None:
        raise app_error(
            Kind.RUN_NOT_FOUND,
            f"rtrain knows of no run {run_id} on {host}; `rtrain runs {host}` lists the ones "
            "it does.",
        )
    return run


def closes(p: ForwardCloseParams, fwd: ForwardInfo) -> bool:
    """Whether `forwards/close` with `p` ends `fwd`: it matches everything `p` names."""
    return (
        (p.local_port is None or fwd.local_port == p.local_port)
        and (p.host is None or fwd.host == p.host)
        and (p.remote_port is None or fwd.remote_port == p.remote_port)
        and (p.reverse is None or fwd.reverse == p.reverse)
    )


def channel_argv(master: ControlMaster, port: int) -> list[str]:
    """ssh through `master` (with every option its commands get) that carries its stdin and
    stdout to 127.0.0.1:`port` on the host instead of running a command."""
    argv = master.command_argv("")
    # command_argv ends with "-T ALIAS COMMAND": the channel replaces the command.
    mode = len(argv) - 1 - argv[::-1].index("-T")
    return [*argv[:mode], "-W", f"{LOOPBACK}:{port}", master.alias]


def _bind(asked: int | None, same_number: int | None) -> socket.socket:
    """A socket bound on 127.0.0.1 (only this machine can reach it): the port asked for,
    else `same_number` where it is free, else any free port."""
    candidates = [asked] if asked is not None else [p for p in (same_number, 0) if p is not None]
    for port in candidates:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A port a closed forward left in TIME_WAIT is free to take again; a live listener
        # still refuses us.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError as error:
            sock.close()
            if asked is None and port != 0 and error.errno in (errno.EADDRINUSE, errno.EACCES):
                continue
            if error.errno == errno.EADDRINUSE:
                raise app_error(
                    Kind.PORT_IN_USE,
                    f"Port {port} of this machine is in use already; choose another with "
                    "--local, or leave --local out for a free one.",
                ) from None
            if error.errno == errno.EACCES:
                raise app_error(
                    Kind.PORT_IN_USE,
                    f"Port {port} of this machine needs root to listen on; choose one above "
                    "1023 with --local.",
                ) from None
            raise app_error(
                Kind.LOCAL_IO, f"Cannot listen on {LOOPBACK}:{port}: {error.strerror}."
            ) from None
        sock.setblocking(False)
        return sock
    raise AssertionError("port 0 is always free")  # pragma: no cover


def _listen(sock: socket.socket, asked: int | None) -> socket.socket:
    """`sock` listening; where another socket took its port meanwhile, any free port unless
    the person asked for that one. (A host that is this machine, a test host or one reached
    through a tunnel, can take the far port's number here for its own listener after it was
    found free: the far server listens on this very loopback.)"""
    try:
        sock.listen(64)
        return sock
    except OSError as error:
        port = sock.getsockname()[1]
        sock.close()
        if asked is not None:
            raise app_error(
                Kind.PORT_IN_USE, f"Port {port} of this machine was taken meanwhile; try again."
            ) from error
    fresh = _bind(None, None)
    try:
        fresh.listen(64)
    except BaseException:
        fresh.close()
        raise
    return fresh


def _not_listening(host: str, port: int) -> RpcError:
    return app_error(
        Kind.PORT_NOT_LISTENING,
        f"Nothing answers on port {port} of {host} (127.0.0.1:{port} there), or its sshd "
        "forwards no ports; start the server there first, listening on 127.0.0.1 or on all "
        "addresses.",
    )


async def _splice_local(conn: socket.socket, port: int) -> None:
    """The built-in host `local`: this machine's own port, byte for byte."""
    try:
        far_reader, far_writer = await asyncio.open_connection(LOOPBACK, port)
    except OSError:
        return
    near_reader, near_writer = await asyncio.open_connection(sock=conn.dup())

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(64 * 1024):
                writer.write(chunk)
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except OSError:
            pass

    try:
        await asyncio.gather(pump(near_reader, far_writer), pump(far_reader, near_writer))
    finally:
        for writer in (far_writer, near_writer):
            writer.close()
