"""A synchronous JSON-RPC client of the daemon, over its Unix socket.

`DaemonClient.connect()` finds the daemon, starts one when none answers (unless told not
to), initializes, and replaces a daemon of another version once.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rtrain.protocol import errors as pe
from rtrain.protocol import locations
from rtrain.protocol.connection import Connection, Role
from rtrain.protocol.daemon_process import LOST_RACE
from rtrain.protocol.events import ConnectionBroken, ErrorResponse, Notification, Response
from rtrain.protocol.version import PROTOCOL_VERSION, RTRAIN_VERSION

from . import daemon_notices
from .errors import DaemonProtocolError, DaemonUnavailable, Interrupted, RemoteError
from .spawn import spawn_allowed, spawn_daemon

NotificationHandler = Callable[[str, Any], None]
SPAWN_WAIT = 5.0


class DaemonClient:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._conn = Connection(Role.CLIENT)
        self.server_version: str | None = None
        self._told: tuple[list[str], dict[str, str]] = ([], {})

    # ---- connecting -----------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        *,
        spawn: bool | None = None,
        name: str = "rtrain-cli",
        socket_path: Path | None = None,
        timeout: float | None = None,
        tell: bool = True,
    ) -> DaemonClient:
        """Connect and initialize. `spawn` None means: unless RTRAIN_NO_SPAWN is set.

        With `tell`, the daemon's start-up notices and any difference between this
        process's settings and the daemon's are said on stderr."""
        client = cls._connect(spawn, name, socket_path, timeout)
        if tell:
            daemon_notices.tell(*client._told)
        return client

    @classmethod
    def _connect(
        cls, spawn: bool | None, name: str, socket_path: Path | None, timeout: float | None
    ) -> DaemonClient:
        path = socket_path or locations.socket_path()
        may_spawn = spawn_allowed() if spawn is None else spawn
        client = cls._open(path, may_spawn, timeout)
        try:
            client._initialize(name)
        except RemoteError as error:
            if error.kind != pe.Kind.PROTOCOL_VERSION_MISMATCH or not may_spawn:
                raise
            client = cls._replace_daemon(client, path, timeout, str(error))
            client._initialize(name)
            return client
        if client.server_version != RTRAIN_VERSION and may_spawn:
            old = client.server_version
            client = cls._replace_daemon(client, path, timeout, f"it was version {old}")
            client._initialize(name)
        return client

    @classmethod
    def _open(cls, path: Path, may_spawn: bool, timeout: float | None) -> DaemonClient:
        try:
            return cls(_dial(path, timeout))
        except (FileNotFoundError, ConnectionRefusedError):
            if not may_spawn:
                raise DaemonUnavailable(
                    "No rtrain daemon is running; start one with `rtrain daemon start` "
                    "(auto-start is off: --no-spawn or RTRAIN_NO_SPAWN)."
                ) from None
        except OSError as error:
            raise DaemonUnavailable(f"Cannot reach the rtrain daemon at {path}: {error}.") from None
        daemon = spawn_daemon()
        deadline = time.monotonic() + SPAWN_WAIT
        delay = 0.01
        while True:
            try:
                return cls(_dial(path, timeout))
            except (FileNotFoundError, ConnectionRefusedError):
                if daemon.exited() and LOST_RACE not in daemon.output():
                    # One more look: it may have answered just before it went.
                    try:
                        return cls(_dial(path, timeout))
                    except (FileNotFoundError, ConnectionRefusedError):
                        pass
                    raise DaemonUnavailable(
                        f"The rtrain daemon stopped while starting: {daemon.last_error()} "
                        f"(its log: {daemon.log})."
                    ) from None
                if time.monotonic() > deadline:
                    raise DaemonUnavailable(
                        f"The rtrain daemon did not start within {SPAWN_WAIT:.0f} s; see "
                        f"{locations.log_path()} (or run `rtrain daemon run` to watch it)."
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.25)

    @classmethod
    def _replace_daemon(
        cls, old: DaemonClient, path: Path, timeout: float | None, why: str
    ) -> DaemonClient:
        print(f"rtrain: restarting the daemon ({why}; this is {RTRAIN_VERSION}).", file=sys.stderr)
        try:
            old.request("daemon/stop")
        except (RemoteError, DaemonProtocolError):
            pass
        old.close()
        deadline = time.monotonic() + SPAWN_WAIT
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return cls._open(path, True, timeout)

    def _initialize(self, name: str) -> None:
        result = self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientInfo": {"name": name, "version": RTRAIN_VERSION},
                "processId": os.getpid(),
            },
        )
        self.server_version = result.server_info.version
        self._told = (result.notices, result.settings)
        self._conn.send_notification("initialized")
        self._send()

    # ---- requests -------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: Any = None,
        on_notification: NotificationHandler | None = None,
        cancel_on_interrupt: bool = False,
    ) -> Any:
        """Send a request and wait for its answer, passing notifications that arrive
        meanwhile to `on_notification`. Raises RemoteError for an error answer.

        With `cancel_on_interrupt`, Ctrl-C sends `$/cancelRequest` and waits for the
        daemon's answer, then raises `Interrupted` saying whether the request finished
        anyway (`.result`) or was cancelled (`.result` is None). A second Ctrl-C aborts.
        """
        msg_id = self._conn.send_request(method, params)
        self._send()
        try:
            return self._wait(msg_id, on_notification)
        except KeyboardInterrupt:
            if not cancel_on_interrupt:
                raise
        self._conn.cancel(msg_id)
        self._send()
        try:
            result = self._wait(msg_id, on_notification)
        except RemoteError as error:
            if error.code == pe.REQUEST_CANCELLED:
                raise Interrupted(None) from None
            raise
        raise Interrupted(result)

    def _wait(self, msg_id: int, on_notification: NotificationHandler | None) -> Any:
        while True:
            try:
                data = self._sock.recv(256 * 1024)
            except OSError as error:
                raise DaemonProtocolError.lost(error) from None
            if not data:
                raise DaemonProtocolError.closed()
            for event in self._conn.receive_data(data):
                if isinstance(event, Response) and event.id == msg_id:
                    return event.result
                if isinstance(event, ErrorResponse) and event.id in (msg_id, None):
                    raise _remote_error(event.error)
                if isinstance(event, Notification) and on_notification is not None:
                    on_notification(event.method, event.params)
                if isinstance(event, ConnectionBroken):
                    raise DaemonProtocolError.garbage(event.reason)

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self) -> None:
        data = self._conn.data_to_send()
        try:
            self._sock.sendall(data)
        except OSError as error:
            raise DaemonProtocolError.lost(error) from None


def _dial(path: Path, timeout: float | None) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
    except BaseException:
        sock.close()
        raise
    return sock


def _remote_error(error: pe.RpcError) -> RemoteError:
    kind = (error.data or {}).get("kind")  # as sent: a newer daemon may know more kinds
    kind = kind if isinstance(kind, str) else None
    return RemoteError(error.message, kind=kind, code=error.code, data=error.data)
