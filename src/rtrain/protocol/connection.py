"""The daemon's side of a JSON-RPC 2.0 connection, sans-IO: bytes in, events out; answers
and notifications in, bytes out.

`receive_data(bytes)` returns events and may queue automatic replies (parse errors, unknown
methods, invalid params, lifecycle refusals); `send_*` queue outgoing messages. The caller
writes `data_to_send()` to its transport. Nothing here touches a socket, a thread or a loop.
Params are decoded straight into the msgspec Structs. The client's side, which must start
without msgspec, is `client_connection.py`; both follow `lifecycle.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgspec

from rtrain.protocol import errors as e

from .events import ConnectionBroken, Event, Notification, Request, RequestId
from .framing import DEFAULT_MAX_FRAME, FrameReader, FramingError, encode_frame
from .lifecycle import State, Step, admits_notification, after, refusal
from .methods import METHODS
from .version import PROTOCOL_VERSION, protocol_major


class _ErrorObject(msgspec.Struct):
    code: int
    message: str
    data: Any = msgspec.UNSET


class _Envelope(msgspec.Struct):
    # Typed loosely so that a wrong type gets a sentence naming the field, not msgspec's.
    jsonrpc: Any = msgspec.UNSET
    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


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
    return _decode(decoder, raw)


class _Unreadable(Exception):
    """Bytes that are not JSON text: the sentence says what is wrong with them."""


def _decode(decoder: msgspec.json.Decoder[Any], data: bytes | msgspec.Raw) -> Any:
    """Decode, raising ValidationError (wrong shape) or _Unreadable (not JSON text)."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError:
        raise
    except msgspec.DecodeError as error:
        raise _Unreadable(unreadable_reason(bytes(data), str(error))) from None
    except RecursionError:
        raise _Unreadable("the JSON is nested too deeply to read") from None


# Every escape in a JSON text, in order: `\\`, `\"`, ... and `\uXXXX` (group 1).
_ESCAPE = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def unreadable_reason(data: bytes, decoder_says: str) -> str:
    """Why `data` is not JSON text, in words that name the problem."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"the text is not valid UTF-8 (byte {error.start})"
    lone: re.Match[bytes] | None = None  # a high surrogate waiting for its low half
    for escape in _ESCAPE.finditer(data):
        unit = int(escape[1], 16) if escape[1] else -1
        is_low = 0xDC00 <= unit <= 0xDFFF
        if lone is not None:
            if not is_low or escape.start() != lone.end():
                break
            lone = None
        elif 0xD800 <= unit <= 0xDBFF:
            lone = escape
        elif is_low:
            lone = escape
            break
    if lone is not None:
        return (
            f"{lone[0].decode()} at byte {lone.start()} is a lone surrogate, not a character "
            "(JSON text must be valid Unicode)"
        )
    return decoder_says


@dataclass
class _Batch:
    waiting: set[RequestId] = field(default_factory=set)
    replies: list[bytes] = field(default_factory=list)
    closed: bool = False  # every item of the incoming batch has been looked at


class Connection:
    """The daemon's side of one client's conversation. It follows the lifecycle table: a
    request the table refuses is answered with the table's error."""

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.state = State.NEW
        self._reader = FrameReader(max_frame)
        self._outgoing = bytearray()
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

    def _receive_frame(self, body: bytes) -> list[Event]:
        try:
            message = _decode(_message_decoder, body)
        except msgspec.ValidationError:
            self._queue_error(
                None,
                e.RpcError(
                    e.INVALID_REQUEST,
                    "Invalid request: a message is a JSON object or an array of them.",
                ),
            )
            return []
        except _Unreadable as error:
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
                envelope = _decode(_envelope_decoder, raw)
            except (msgspec.ValidationError, _Unreadable):
                batch.replies.append(
                    self._error_body(
                        None,
                        e.RpcError(
                            e.INVALID_REQUEST,
                            "Invalid request: each item of a batch is a JSON object.",
                        ),
                    )
                )
                continue
            events.extend(self._receive_envelope(envelope, batch))
        batch.closed = True
        self._flush_batch_if_done(batch)
        return events

    def _receive_envelope(self, env: _Envelope, batch: _Batch | None) -> list[Event]:
        has_id = env.id is not msgspec.UNSET
        id_ok = env.id is None or isinstance(env.id, str) or type(env.id) is int
        msg_id: RequestId | None = env.id if has_id and id_ok else None
        problem = None
        if env.jsonrpc != "2.0":
            problem = '"jsonrpc" must be "2.0"'
        elif has_id and not id_ok:
            problem = f"an id is an integer or a string, not {_json_type(env.id)}"
        elif env.method is not msgspec.UNSET and not isinstance(env.method, str):
            problem = f'"method" is a string, not {_json_type(env.method)}'
        if problem is not None:
            self._reply_error(
                msg_id, e.RpcError(e.INVALID_REQUEST, f"Invalid request: {problem}."), batch
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
            return []  # the daemon sends no requests: an answer is to nothing it asked
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
        if spec is None or spec.is_notification or spec.direction == "server->client":
            self._reply_error(
                msg_id,
                e.RpcError(e.METHOD_NOT_FOUND, f"Method not found: {method}.", {"method": method}),
                batch,
            )
            return []
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
        except _Unreadable as error:
            self._reply_error(msg_id, e.RpcError(e.PARSE_ERROR, f"Parse error: {error}."), batch)
            return []
        if method == "initialize":
            mismatch = _version_mismatch(value.protocol_version or PROTOCOL_VERSION)
            if mismatch is not None:
                self._reply_error(msg_id, mismatch, batch)
                return []
        self.state = after(self.state, Step.REQUEST, method)
        self._received[msg_id] = (method, batch)
        if batch is not None:
            batch.waiting.add(msg_id)
        return [Request(msg_id, method, value)]

    def _receive_notification(self, method: str, params: Any) -> list[Event]:
        spec = METHODS.get(method)
        if spec is None or not spec.is_notification:
            return []  # unknown notifications are ignored, as JSON-RPC requires
        if not admits_notification(self.state, method):
            return []
        try:
            value = self._decode_params(spec.params, params)
        except (msgspec.ValidationError, _Unreadable):
            return []  # a notification has nobody to tell
        self.state = after(self.state, Step.NOTIFICATION, method)
        return [Notification(method, value)]

    @staticmethod
    def _decode_params(kind: Any, raw: Any) -> Any:
        if raw is msgspec.UNSET or bytes(raw).strip() == b"null":
            raw = _EMPTY_OBJECT
        if bytes(raw).lstrip()[:1] == b"[":
            raise msgspec.ValidationError("params must be an object (by-name), not an array")
        return _decode_as(kind, raw)

    # ---- output --------------------------------------------------------------------

    def send_notification(self, method: str, params: Any = None) -> None:
        if method not in METHODS or not METHODS[method].is_notification:
            raise e.LocalProtocolError(f"{method} is not a notification")
        self._queue(_Out("2.0", method=method, params=_unset_if_none(params)))

    def send_result(self, msg_id: RequestId, result: Any) -> None:
        method, batch = self._take_received(msg_id)
        self.state = after(self.state, Step.RESULT, method)
        self._answer(batch, msg_id, _encoder.encode(_Out("2.0", id=msg_id, result=result)))

    def send_error(self, msg_id: RequestId, error: e.RpcError) -> None:
        method, batch = self._take_received(msg_id)
        self.state = after(self.state, Step.ERROR, method)
        self._answer(batch, msg_id, self._error_body(msg_id, error))

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


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number with a fraction"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


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
