"""The client's side of a connection, sans-IO: calls in, bytes out; bytes in, events out.

Standard library only, so that `rtrain status` starts in a few tens of milliseconds: msgspec
and the Structs (the daemon's side, `connection.py`) would cost more than the command does.
Requests come from the typed builders in `requests.py` (generated from the Structs), and
answers arrive as WireObjects: the JSON as the daemon sent it, readable like the Structs.
This side follows the lifecycle table too, from the other end: a message the table refuses
is a LocalProtocolError, raised before anything is queued.
"""

from __future__ import annotations

import json
from typing import Any

from . import errors as e
from .events import ConnectionBroken, ErrorResponse, Event, Notification, Response
from .framing import DEFAULT_MAX_FRAME, FrameReader, FramingError, encode_frame
from .lifecycle import State, Step, admits_notification, after, refusal
from .requests import CLIENT_NOTIFICATIONS, CLIENT_REQUESTS, Call, cancel_request
from .wire_object import WireObject


class ClientConnection:
    """One client's conversation with the daemon."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.state = State.NEW
        self.broken = False  # the daemon's byte stream could not be framed
        self._reader = FrameReader(max_frame)
        self._outgoing = bytearray()
        self._next_id = 1
        self._sent: dict[int, str] = {}  # our requests awaiting an answer -> method

    # ---- output --------------------------------------------------------------------

    def send_request(self, call: Call[Any]) -> int:
        """Queue a request; returns its id. Its answer arrives as Response or ErrorResponse."""
        if call.method not in CLIENT_REQUESTS:
            raise e.LocalProtocolError(f"{call.method} is not a request a client sends")
        refused = refusal(self.state, call.method)
        if refused is not None:
            raise e.LocalProtocolError(refused[1])
        self.state = after(self.state, Step.REQUEST, call.method)
        msg_id = self._next_id
        self._next_id += 1
        self._sent[msg_id] = call.method
        self._queue({"jsonrpc": "2.0", "id": msg_id, "method": call.method, **_params(call)})
        return msg_id

    def send_notification(self, call: Call[Any]) -> None:
        if call.method not in CLIENT_NOTIFICATIONS:
            raise e.LocalProtocolError(f"{call.method} is not a notification a client sends")
        if not admits_notification(self.state, call.method):
            raise e.LocalProtocolError(
                f"{call.method} cannot be sent now: the connection is {self.state.value}."
            )
        self.state = after(self.state, Step.NOTIFICATION, call.method)
        self._queue({"jsonrpc": "2.0", "method": call.method, **_params(call)})

    def cancel(self, msg_id: int) -> None:
        """Queue `$/cancelRequest` for a request still awaiting its answer (which still comes)."""
        if msg_id in self._sent:
            self.send_notification(cancel_request(id=msg_id))

    def data_to_send(self) -> bytes:
        """Everything queued for the daemon since the last call."""
        data = bytes(self._outgoing)
        self._outgoing.clear()
        return data

    def _queue(self, message: dict[str, Any]) -> None:
        # ASCII JSON: a lone surrogate (a file name's undecodable byte) travels as an escape
        # the daemon names, rather than failing here as text that cannot be UTF-8.
        self._outgoing += encode_frame(json.dumps(message, separators=(",", ":")).encode())

    # ---- input ---------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from the daemon; returns what they meant. Never raises for bad input."""
        if self.broken:
            return []
        broken: ConnectionBroken | None = None
        try:
            frames = self._reader.feed(data)
        except FramingError as error:
            frames = error.frames  # what came whole before the bad header still counts
            broken = ConnectionBroken(str(error))
        events: list[Event] = []
        for body in frames:
            events.extend(self._receive_frame(body))
        if broken is not None:
            self.broken = True
            events.append(broken)
        return events

    def _receive_frame(self, body: bytes) -> list[Event]:
        try:
            message = json.loads(body, object_pairs_hook=WireObject)
        except (ValueError, RecursionError):
            return []  # not JSON: a client has nobody to tell, so it is dropped
        events = []
        for item in message if isinstance(message, list) else [message]:
            event = self._receive_message(item) if isinstance(item, WireObject) else None
            if event is not None:
                events.append(event)
        return events

    def _receive_message(self, message: WireObject) -> Event | None:
        if message.get("jsonrpc") != "2.0":
            return None
        method = message.get("method")
        is_answer = "result" in message or "error" in message
        if isinstance(method, str) and not is_answer:
            if "id" in message:
                return None  # the daemon sends no requests; nothing here could serve one
            params = message.get("params")
            return Notification(method, params if isinstance(params, WireObject) else WireObject())
        if not is_answer or "id" not in message or "method" in message:
            return None
        answer_id = message["id"]
        known = type(answer_id) is int and answer_id in self._sent  # JSON `true` is no id
        sent = self._sent.pop(answer_id) if known else None
        if "error" in message:
            error = _rpc_error(message["error"])
            if error is None or (sent is None and answer_id is not None):
                return None  # malformed, or an answer to nothing we asked
            if sent is not None:
                self.state = after(self.state, Step.ERROR, sent)
            return ErrorResponse(answer_id if sent is not None else None, sent, error)
        if sent is None:
            return None
        self.state = after(self.state, Step.RESULT, sent)
        return Response(answer_id, sent, message["result"])


def _params(call: Call[Any]) -> dict[str, Any]:
    return {"params": call.params} if call.params else {}


def _rpc_error(error: Any) -> e.RpcError | None:
    """The error an answer carries; None when it is malformed (then ignored)."""
    if not isinstance(error, dict):
        return None
    code, message = error.get("code"), error.get("message")
    if type(code) is not int or not isinstance(message, str):
        return None
    data = error.get("data")
    return e.RpcError(code, message, data if isinstance(data, dict) else None)
