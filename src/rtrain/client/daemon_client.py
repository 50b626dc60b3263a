"""rtrain's JSON-RPC client of the daemon, synchronous, over its Unix socket: the one the
CLI, the Python API and the tests use.

`DaemonClient.connect()` finds the daemon, starts one when none answers (unless told not
to), initializes, and replaces a daemon of another version once. It speaks through the
sans-IO `ClientConnection` (standard library only), and loads what starting a daemon needs
only when it must start one, so the warm case (a running daemon of this version) costs
little more than the interpreter: that is most `rtrain status` and `rtrain tail` calls.
Answers are WireObjects: the JSON as sent, read like the protocol's Structs.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rtrain.protocol import errors as pe
from rtrain.protocol import locations, requests
from rtrain.protocol.client_connection import ClientConnection
from rtrain.protocol.daemon_process import LOST_RACE
from rtrain.protocol.events import ConnectionBroken, ErrorResponse, Notification, Response
from rtrain.protocol.requests import Call
from rtrain.protocol.version import PROTOCOL_VERSION, RTRAIN_VERSION

from . import daemon_notices
from .errors import DaemonProtocolError, DaemonUnavailable, Interrupted, RemoteError, remote_error

if TYPE_CHECKING:
    from rtrain.protocol.requests import WireRequest

# The answer a call promises (requests.py's `...Answer` views; a WireObject at run time).
R = TypeVar("R")

NotificationHandler = Callable[[str, Any], None]
SPAWN_WAIT = 5.0


class DaemonClient:
    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._conn = ClientConnection()
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

        def may_spawn() -> bool:
            from .spawn import spawn_allowed  # not on the warm path: it loads more

            return spawn_allowed() if spawn is None else spawn

        client = cls._open(path, may_spawn, timeout)
        try:
            client._initialize(name)
        except RemoteError as error:
            if error.kind != pe.Kind.PROTOCOL_VERSION_MISMATCH or not may_spawn():
                raise
            client = cls._replace_daemon(client, path, timeout, str(error))
            client._initialize(name)
            return client
        if client.server_version != RTRAIN_VERSION and may_spawn():
            old = client.server_version
            client = cls._replace_daemon(client, path, timeout, f"it was version {old}")
            client._initialize(name)
        return client

    @classmethod
    def _open(
        cls, path: Path, may_spawn: Callable[[], bool], timeout: float | None
    ) -> DaemonClient:
        try:
            return cls(_dial(path, timeout))
        except (FileNotFoundError, ConnectionRefusedError):
            if not may_spawn():
                raise DaemonUnavailable(
                    "No rtrain daemon is running; start one with `rtrain daemon start` "
                    "(auto-start is off: --no-spawn or RTRAIN_NO_SPAWN)."
                ) from None
        except OSError as error:
            raise DaemonUnavailable(f"Cannot reach the rtrain daemon at {path}: {error}.") from None
        from .spawn import spawn_daemon

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
            old.call(requests.daemon_stop())
        except (RemoteError, DaemonProtocolError):
            pass
        old.close()
        deadline = time.monotonic() + SPAWN_WAIT
        while path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        return cls._open(path, lambda: True, timeout)

    def _initialize(self, name: str) -> None:
        result = self.call(
            requests.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_info={"name": name, "version": RTRAIN_VERSION},
                process_id=os.getpid(),
            )
        )
        server = getattr(result, "server_info", None)
        version = getattr(server, "version", None)
        if not isinstance(version, str):
            raise DaemonProtocolError.garbage("its answer to initialize has no serverInfo.version")
        self.server_version = version
        self._told = (list(result.notices or []), dict(result.settings or {}))
        self._conn.send_notification(requests.initialized())
        self._send()

    # ---- requests -------------------------------------------------------------------

    def call(
        self,
        call: Call[R],
        on_notification: NotificationHandler | None = None,
        cancel_on_interrupt: bool = False,
    ) -> R:
        """Send a request built by `rtrain.protocol.requests` and wait for its answer,
        passing notifications that arrive meanwhile to `on_notification`. Raises
        RemoteError for an error answer.

        With `cancel_on_interrupt`, Ctrl-C sends `$/cancelRequest` and waits for the
        daemon's answer, then raises `Interrupted` saying whether the request finished
        anyway (`.result`) or was cancelled (`.result` is None). A second Ctrl-C aborts.
        """
        try:
            msg_id = self._conn.send_request(call)
        except pe.LocalProtocolError as error:
            raise DaemonProtocolError(f"Cannot send {call.method} now: {error}") from None
        self._send()
        try:
            answer: R = self._wait(msg_id, on_notification)
            return answer
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

    @property
    def request(self) -> WireRequest:
        """`call` with the wire's own method name and params, for tools and tests that
        speak the wire directly; rtrain's own code builds its calls with `requests`. Typed
        by the method's name: `request("daemon/info")` is a DaemonInfoAnswer."""
        return self._request  # type: ignore[return-value]  # the overloads are WireRequest's

    def _request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        on_notification: NotificationHandler | None = None,
        cancel_on_interrupt: bool = False,
    ) -> object:
        call: Call[object] = Call(method, params or {})
        return self.call(call, on_notification, cancel_on_interrupt)

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
    return remote_error(error.message, kind, error.code, error.data)
