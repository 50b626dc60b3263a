"""What a connection hands its caller: small frozen records, one per thing that happened.

NamedTuples rather than dataclasses: the client reads these too, and importing
`dataclasses` would cost it start-up time.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .errors import RpcError

RequestId = int | str


class Request(NamedTuple):
    """A request to answer with `send_result` or `send_error`. `params` is already validated."""

    id: RequestId
    method: str
    params: Any


class Notification(NamedTuple):
    method: str
    params: Any


class Response(NamedTuple):
    """The result of a request this side sent."""

    id: RequestId
    method: str
    result: Any


class ErrorResponse(NamedTuple):
    """An error answer to a request this side sent (or, with id None, to unparsable input)."""

    id: RequestId | None
    method: str | None
    error: RpcError


class ConnectionBroken(NamedTuple):
    """The peer broke the framing; flush `data_to_send()` (an error reply) and close."""

    reason: str


Event = Request | Notification | Response | ErrorResponse | ConnectionBroken
