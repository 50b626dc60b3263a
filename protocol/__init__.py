"""rtrain's wire protocol, sans-IO: framing, messages, the connection state machine, errors."""

from .connection import Connection, Role
from .errors import Kind, RpcError, app_error
from .events import ConnectionBroken, ErrorResponse, Event, Notification, Request, Response
from .version import PROTOCOL_VERSION, RTRAIN_VERSION

__all__ = [
    "PROTOCOL_VERSION",
    "RTRAIN_VERSION",
    "Connection",
    "ConnectionBroken",
    "ErrorResponse",
    "Event",
    "Kind",
    "Notification",
    "Request",
    "Response",
    "Role",
    "RpcError",
    "app_error",
]
