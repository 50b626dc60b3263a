"""What a Connection hands its caller: small frozen records, one per thing that happened."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import RpcError

RequestId = int | str


@dataclass(frozen=True)
class Request:
    """A request to answer with `send_result` or `send_error`. `params` is already validated."""

    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True)
class Notification:
    method: str
    params: Any


@dataclass(frozen=True)
class Response:
    """The result of a request this side sent."""

    id: RequestId
    method: str
    result: Any


@dataclass(frozen=True)
class ErrorResponse:
    """An error answer to a request this side sent (or, with id None, to unparsable input)."""

    id: RequestId | None
    method: str | None
    error: RpcError


@dataclass(frozen=True)
class ConnectionBroken:
    """The peer broke the framing; flush `data_to_send()` (an error reply) and close."""

    reason: str


Event = Request | Notification | Response | ErrorResponse | ConnectionBroken
