"""What a connection hands its caller: small records, one per thing that happened.

Plain classes with slots rather than dataclasses or NamedTuples: the client reads these
too, and building those at import would cost its start-up.
"""

from __future__ import annotations

from typing import Any

from .errors import RpcError

RequestId = int | str


class _Record:
    """Fields named by __slots__, given in order; equal when of one type with equal fields."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: Any) -> None:
        if len(values) != len(self.__slots__):
            raise TypeError(f"{type(self).__name__} takes {len(self.__slots__)} values")
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return False
        assert isinstance(other, _Record)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


class Request(_Record):
    """A request to answer with `send_result` or `send_error`. `params` is already validated."""

    __slots__ = ("id", "method", "params")
    id: RequestId
    method: str
    params: Any


class Notification(_Record):
    __slots__ = ("method", "params")
    method: str
    params: Any


class Response(_Record):
    """The result of a request this side sent."""

    __slots__ = ("id", "method", "result")
    id: RequestId
    method: str
    result: Any


class ErrorResponse(_Record):
    """An error answer to a request this side sent (or, with id None, to unparsable input)."""

    __slots__ = ("id", "method", "error")
    id: RequestId | None
    method: str | None
    error: RpcError


class ConnectionBroken(_Record):
    """The peer broke the framing; flush `data_to_send()` (an error reply) and close."""

    __slots__ = ("reason",)
    reason: str


Event = Request | Notification | Response | ErrorResponse | ConnectionBroken
