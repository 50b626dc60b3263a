"""rtrain's wire protocol, sans-IO: framing, messages, the connection state machine, errors.

Names are loaded on first use, so `import rtrain.protocol.version` (the CLI's `--version`)
costs nothing beyond that module.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "ClientConnection": "client_connection",
    "Connection": "connection",
    "Kind": "errors",
    "RpcError": "errors",
    "app_error": "errors",
    "ConnectionBroken": "events",
    "ErrorResponse": "events",
    "Event": "events",
    "Notification": "events",
    "Request": "events",
    "Response": "events",
    "PROTOCOL_VERSION": "version",
    "RTRAIN_VERSION": "version",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rtrain.protocol' has no attribute {name!r}")
    return getattr(import_module(f".{module}", __name__), name)
