"""A JSON-RPC client of the daemon for the warm case alone, built from `json` and a socket.

Nearly every `rtrain status` or `rtrain tail` finds a daemon of this very version already
running, and for such a short command start-up is most of the cost: DaemonClient loads
msgspec and the protocol's message classes (about 35 ms), this client nothing beyond the
standard library. It serves the plain case only: `QuickClient.connect()` returns None when
anything is not plain before the first request is sent (no socket, refused, another version,
an odd answer), and the caller falls back to DaemonClient, which starts or replaces the
daemon. From the first request on, failures are reported in DaemonClient's words.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from typing import Any

from rtrain.protocol import locations
from rtrain.protocol.framing import FrameReader, FramingError, encode_frame
from rtrain.protocol.version import PROTOCOL_VERSION, RTRAIN_VERSION

from . import daemon_notices
from .errors import DaemonProtocolError, RemoteError, RtrainError
from .wire_object import WireObject

NotificationHandler = Callable[[str, Any], None]
RECEIVE_BYTES = 256 * 1024


class QuickClient:
    """One connection; answers and notification params come back as WireObjects."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._reader = FrameReader()
        self._frames: list[bytes] = []  # received, not looked at yet
        self._garbage: str | None = None  # why the byte stream broke, once it has
        self._next_id = 1

    @classmethod
    def connect(cls, name: str = "rtrain-cli") -> QuickClient | None:
        """An initialized connection to a running daemon of this version, or None."""
        try:
            client = cls(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        except OSError:
            return None
        try:
            client._sock.connect(str(locations.socket_path()))
            answer = client.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientInfo": {"name": name, "version": RTRAIN_VERSION},
                    "processId": os.getpid(),
                },
            )
            server = answer.get("serverInfo") if isinstance(answer, dict) else None
            if not isinstance(server, dict) or server.get("version") != RTRAIN_VERSION:
                client.close()
                return None
            client._send({"jsonrpc": "2.0", "method": "initialized"})
            daemon_notices.tell(answer.get("notices", []), answer.get("settings", {}))
        except (OSError, RtrainError):
            client.close()
            return None
        return client

    def request(
        self, method: str, params: Any = None, on_notification: NotificationHandler | None = None
    ) -> Any:
        """Send a request and wait for its answer, passing notifications that arrive
        meanwhile to `on_notification`. Raises RemoteError for an error answer."""
        msg_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self._send(message)
        return self._wait(msg_id, on_notification)

    def close(self) -> None:
        try:
            self._sock.close()
        except OSError:
            pass

    def __enter__(self) -> QuickClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the conversation, as rtrain.protocol.connection reads it ---------------------

    def _wait(self, msg_id: int, on_notification: NotificationHandler | None) -> Any:
        while True:
            message = self._next_message()
            if message.get("jsonrpc") != "2.0":
                continue
            method = message.get("method")
            is_answer = "result" in message or "error" in message
            if isinstance(method, str) and not is_answer:
                params = message.get("params", WireObject())
                # A request from the daemon has nobody to serve it here, as in DaemonClient.
                if "id" not in message and on_notification and isinstance(params, WireObject):
                    on_notification(method, params)
                continue
            if not is_answer or "id" not in message or "method" in message:
                continue
            answer_id = message["id"]
            if "error" in message:
                error = _remote_error(message["error"])
                if error is not None and (answer_id is None or _same_id(answer_id, msg_id)):
                    raise error
            elif _same_id(answer_id, msg_id):
                return message["result"]

    def _next_message(self) -> WireObject:
        while True:
            while self._frames:
                try:
                    message = json.loads(self._frames.pop(0), object_pairs_hook=WireObject)
                except ValueError:
                    continue  # not JSON: dropped, as the protocol's connection drops it
                if isinstance(message, WireObject):
                    return message
            if self._garbage is not None:
                raise DaemonProtocolError.garbage(self._garbage)
            self._receive()

    def _receive(self) -> None:
        try:
            data = self._sock.recv(RECEIVE_BYTES)
        except OSError as error:
            raise DaemonProtocolError.lost(error) from None
        if not data:
            raise DaemonProtocolError.closed()
        try:
            self._frames += self._reader.feed(data)
        except FramingError as error:
            self._frames += error.frames  # what came whole before the bad header still counts
            self._garbage = str(error)

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        try:
            self._sock.sendall(encode_frame(body))
        except OSError as error:
            raise DaemonProtocolError.lost(error) from None


def _same_id(answer_id: Any, msg_id: int) -> bool:
    return type(answer_id) is int and answer_id == msg_id  # JSON `true` is no id


def _remote_error(error: Any) -> RemoteError | None:
    """The error an answer carries; None when it is malformed (then ignored, as in the protocol)."""
    if not isinstance(error, dict):
        return None
    code, message = error.get("code"), error.get("message")
    if type(code) is not int or not isinstance(message, str):
        return None
    data = error.get("data")
    data = data if isinstance(data, dict) else None
    kind = (data or {}).get("kind")
    return RemoteError(message, kind=kind if isinstance(kind, str) else None, code=code, data=data)
