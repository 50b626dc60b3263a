"""A sans-IO JSON-RPC 2.0 connection: bytes in, events out; messages in, bytes out.

`receive_data(bytes)` returns events and may queue automatic replies (parse errors, unknown
methods, invalid params, lifecycle refusals); `send_*` queue outgoing messages. The caller
writes `data_to_send()` to its transport. Nothing here touches a socket, a thread or a loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import msgspec

from . import errors as e
from .events import (
    ConnectionBroken,
    ErrorResponse,
    Event,
    Notification,
    Request,
    RequestId,
    Response,
)
from .framing import DEFAULT_MAX_FRAME, FrameReader, FramingError, encode_frame
from .lifecycle import (
    ERROR_TRANSITIONS,
    REQUEST_TRANSITIONS,
    RESULT_TRANSITIONS,
    State,
    admits_notification,
    refusal,
)
from .methods import METHODS
from .version import PROTOCOL_VERSION, protocol_major


class Role(Enum):
    CLIENT = "client"
    SERVER = "server"


class _ErrorObject(msgspec.Struct):
    code: int
    message: str
    data: Any = msgspec.UNSET


class _Envelope(msgspec.Struct):
    jsonrpc: str | msgspec.UnsetType = msgspec.UNSET
    id: int | str | None | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: _ErrorObject | msgspec.UnsetType = msgspec.UNSET


class _Out(msgspec.Struct, omit_defaults=True):
    jsonrpc: str  # always "2.0"; no default, so omit_defaults keeps it
    id: int | str | None | msgspec.UnsetType = msgspec.UNSET
    method: str | msgspec.UnsetType = msgspec.UNSET
    params: Any = msgspec.UNSET
    result: Any = msgspec.UNSET
    error: _ErrorObject | msgspec.UnsetType = msgspec.UNSET


_message_decoder = msgspec.json.Decoder(list[msgspec.Raw] | _Envelope)
_envelope_decoder = msgspec.json.Decoder(_Envelope)
_encoder = msgspec.json.Encoder()
_typed_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}
_EMPTY_OBJECT = msgspec.Raw(b"{}")


def _decode_as(kind: Any, raw: msgspec.Raw) -> Any:
    decoder = _typed_decoders.get(kind)
    if decoder is None:
        decoder = _typed_decoders[kind] = msgspec.json.Decoder(kind)
    return decoder.decode(raw)


@dataclass
class _Batch:
    waiting: set[RequestId] = field(default_factory=set)
    replies: list[bytes] = field(default_factory=list)
    closed: bool = False  # every item of the incoming batch has been looked at


class Connection:
    """One side of a JSON-RPC conversation. `role` decides which lifecycle it enforces."""

    def __init__(self, role: Role, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.role = role
        self.state = State.NEW
        self._reader = FrameReader(max_frame)
        self._outgoing = bytearray()
        self._next_id = 1
        self._sent: dict[RequestId, str] = {}  # our requests awaiting an answer -> method
        self._received: dict[RequestId, tuple[str, _Batch | None]] = {}
        self.broken = False

    # ---- input ---------------------------------------------------------------------

    def receive_data(self, data: bytes) -> list[Event]:
        """Feed bytes from the peer; returns what they meant. Never raises for bad input."""
        if self.broken:
            return []
        broken: ConnectionBroken | None = None
        try:
            frames = self._reader.feed(data)
        except FramingError as error:
            frames = error.frames
            broken = ConnectionBroken(str(error))
        events: list[Event] = []
        for body in frames:
            events.extend(self._receive_frame(body))
        if broken is not None:
            self.broken = True
            self._queue_error(None, e.RpcError(e.PARSE_ERROR, f"Framing error: {broken.reason}."))
            events.append(broken)
        return events

    @property
    def pending_input(self) -> int:
        """Bytes of an incomplete frame still buffered."""
        return self._reader.pending

    def _receive_frame(self, body: bytes) -> list[Event]:
        try:
            message = _message_decoder.decode(body)
        except msgspec.ValidationError:
            self._queue_error(
                None,
                e.RpcError(
                    e.INVALID_REQUEST,
                    "Invalid request: a message is a JSON object or an array of them.",
                ),
            )
            return []
        except msgspec.DecodeError as error:
            self._queue_error(None, e.RpcError(e.PARSE_ERROR, f"Parse error: {error}."))
            return []
        if isinstance(message, _Envelope):
            return self._receive_envelope(message, None)
        if not message:
            self._queue_error(None, e.RpcError(e.INVALID_REQUEST, "Invalid request: empty batch."))
            return []
        batch = _Batch()
        events: list[Event] = []
        for raw in message:
            try:
                envelope = _envelope_decoder.decode(raw)
            except msgspec.DecodeError as error:
                batch.replies.append(
                    self._error_body(
                        None, e.RpcError(e.INVALID_REQUEST, f"Invalid request: {error}.")
                    )
                )
                continue
            events.extend(self._receive_envelope(envelope, batch))
        batch.closed = True
        self._flush_batch_if_done(batch)
        return events

    def _receive_envelope(self, env: _Envelope, batch: _Batch | None) -> list[Event]:
        has_id = env.id is not msgspec.UNSET
        msg_id: RequestId | None = None if env.id is msgspec.UNSET else env.id
        if env.jsonrpc != "2.0":
            self._reply_error(
                msg_id,
                e.RpcError(e.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0".'),
                batch,
            )
            return []
        is_answer = env.result is not msgspec.UNSET or env.error is not msgspec.UNSET
        if isinstance(env.method, str) and not is_answer:
            if not has_id:
                return self._receive_notification(env.method, env.params)
            if msg_id is None:
                self._reply_error(
                    None,
                    e.RpcError(
                        e.INVALID_REQUEST,
                        "Invalid request: a request id is an integer or a string.",
                    ),
                    batch,
                )
                return []
            return self._receive_request(msg_id, env.method, env.params, batch)
        if is_answer and has_id and env.method is msgspec.UNSET:
            return self._receive_answer(msg_id, env)
        self._reply_error(
            msg_id,
            e.RpcError(
                e.INVALID_REQUEST,
                "Invalid request: neither a request, a notification nor a response.",
            ),
            batch,
        )
        return []

    def _receive_request(
        self, msg_id: RequestId, method: str, params: Any, batch: _Batch | None
    ) -> list[Event]:
        spec = METHODS.get(method)
        ours = self.role is Role.SERVER
        if spec is None or spec.is_notification or (spec.direction == "server->client") == ours:
            self._reply_error(
                msg_id,
                e.RpcError(e.METHOD_NOT_FOUND, f"Method not found: {method}.", {"method": method}),
                batch,
            )
            return []
        if self.role is Role.SERVER:
            refused = refusal(self.state, method)
            if refused is not None:
                self._reply_error(msg_id, e.RpcError(*refused), batch)
                return []
        if msg_id in self._received:
            self._reply_error(
                msg_id,
                e.RpcError(e.INVALID_REQUEST, f"Invalid request: id {msg_id!r} is already in use."),
                batch,
            )
            return []
        try:
            value = self._decode_params(spec.params, params)
        except msgspec.ValidationError as error:
            self._reply_error(
                msg_id, e.RpcError(e.INVALID_PARAMS, f"Invalid params: {error}."), batch
            )
            return []
        if method == "initialize" and self.role is Role.SERVER:
            mismatch = _version_mismatch(value.protocol_version)
            if mismatch is not None:
                self._reply_error(msg_id, mismatch, batch)
                return []
        self.state = REQUEST_TRANSITIONS.get((self.state, method), self.state)
        self._received[msg_id] = (method, batch)
        if batch is not None:
            batch.waiting.add(msg_id)
        return [Request(msg_id, method, value)]

    def _receive_notification(self, method: str, params: Any) -> list[Event]:
        spec = METHODS.get(method)
        if spec is None or not spec.is_notification:
            return []  # unknown notifications are ignored, as JSON-RPC requires
        if self.role is Role.SERVER and not admits_notification(self.state, method):
            return []
        try:
            value = self._decode_params(spec.params, params)
        except msgspec.ValidationError:
            return []  # a notification has nobody to tell
        if method == "exit":
            self.state = State.EXITED
        return [Notification(method, value)]

    def _receive_answer(self, msg_id: RequestId | None, env: _Envelope) -> list[Event]:
        method = self._sent.pop(msg_id, None) if msg_id is not None else None
        if isinstance(env.error, _ErrorObject):
            data = env.error.data if isinstance(env.error.data, dict) else None
            error = e.RpcError(env.error.code, env.error.message, data)
            return [ErrorResponse(msg_id, method, error)]
        if method is None or msg_id is None:
            return []  # an answer to nothing we asked; ignore it
        spec = METHODS[method]
        assert isinstance(env.result, msgspec.Raw)
        try:
            result = _decode_as(spec.result, env.result)
        except msgspec.ValidationError as error:
            return [
                ErrorResponse(
                    msg_id,
                    method,
                    e.RpcError(
                        e.INTERNAL_ERROR,
                        f"The peer answered {method} with an invalid result: {error}.",
                    ),
                )
            ]
        if method == "initialize":
            self.state = State.READY
        return [Response(msg_id, method, result)]

    @staticmethod
    def _decode_params(kind: Any, raw: Any) -> Any:
        if raw is msgspec.UNSET or bytes(raw).strip() == b"null":
            raw = _EMPTY_OBJECT
        if bytes(raw).lstrip()[:1] == b"[":
            raise msgspec.ValidationError("params must be an object (by-name), not an array")
        return _decode_as(kind, raw)

    # ---- output --------------------------------------------------------------------

    def send_request(self, method: str, params: Any = None) -> int:
        """Queue a request; returns its id. Its answer arrives as Response or ErrorResponse."""
        if method not in METHODS or METHODS[method].is_notification:
            raise e.LocalProtocolError(f"{method} is not a request")
        msg_id = self._next_id
        self._next_id += 1
        self._sent[msg_id] = method
        self._queue(_Out("2.0", id=msg_id, method=method, params=_unset_if_none(params)))
        return msg_id

    def send_notification(self, method: str, params: Any = None) -> None:
        if method not in METHODS or not METHODS[method].is_notification:
            raise e.LocalProtocolError(f"{method} is not a notification")
        self._queue(_Out("2.0", method=method, params=_unset_if_none(params)))

    def send_result(self, msg_id: RequestId, result: Any) -> None:
        method, batch = self._take_received(msg_id)
        self.state = RESULT_TRANSITIONS.get((self.state, method), self.state)
        self._answer(batch, msg_id, _encoder.encode(_Out("2.0", id=msg_id, result=result)))

    def send_error(self, msg_id: RequestId, error: e.RpcError) -> None:
        method, batch = self._take_received(msg_id)
        self.state = ERROR_TRANSITIONS.get((self.state, method), self.state)
        self._answer(batch, msg_id, self._error_body(msg_id, error))

    def cancel(self, msg_id: int) -> None:
        """Queue `$/cancelRequest` for a request this side sent; its answer still arrives."""
        if msg_id in self._sent:
            self.send_notification("$/cancelRequest", {"id": msg_id})

    def data_to_send(self) -> bytes:
        """Everything queued for the peer since the last call."""
        data = bytes(self._outgoing)
        self._outgoing.clear()
        return data

    @property
    def awaiting_answer(self) -> list[RequestId]:
        """Requests this side received and has not answered yet."""
        return list(self._received)

    def _take_received(self, msg_id: RequestId) -> tuple[str, _Batch | None]:
        try:
            return self._received.pop(msg_id)
        except KeyError:
            raise e.LocalProtocolError(f"no unanswered request with id {msg_id!r}") from None

    def _answer(self, batch: _Batch | None, msg_id: RequestId, body: bytes) -> None:
        if batch is None:
            self._outgoing += encode_frame(body)
            return
        batch.replies.append(body)
        batch.waiting.discard(msg_id)
        self._flush_batch_if_done(batch)

    def _flush_batch_if_done(self, batch: _Batch) -> None:
        if batch.closed and not batch.waiting and batch.replies:
            self._outgoing += encode_frame(b"[" + b",".join(batch.replies) + b"]")
            batch.replies = []

    def _reply_error(
        self, msg_id: RequestId | None, error: e.RpcError, batch: _Batch | None
    ) -> None:
        if batch is None:
            self._queue_error(msg_id, error)
        else:
            batch.replies.append(self._error_body(msg_id, error))

    def _queue_error(self, msg_id: RequestId | None, error: e.RpcError) -> None:
        self._outgoing += encode_frame(self._error_body(msg_id, error))

    @staticmethod
    def _error_body(msg_id: RequestId | None, error: e.RpcError) -> bytes:
        data = msgspec.UNSET if error.data is None else error.data
        return _encoder.encode(
            _Out("2.0", id=msg_id, error=_ErrorObject(error.code, error.message, data))
        )

    def _queue(self, message: _Out) -> None:
        self._outgoing += encode_frame(_encoder.encode(message))


def _unset_if_none(params: Any) -> Any:
    return msgspec.UNSET if params is None else params


def _version_mismatch(client_version: str) -> e.RpcError | None:
    if protocol_major(client_version) == protocol_major(PROTOCOL_VERSION):
        return None
    return e.app_error(
        e.Kind.PROTOCOL_VERSION_MISMATCH,
        f"This client speaks protocol {client_version} but the daemon speaks {PROTOCOL_VERSION}; "
        "upgrade the older of the two (or run `rtrain daemon stop` to restart the daemon).",
        clientVersion=client_version,
        serverVersion=PROTOCOL_VERSION,
    )
