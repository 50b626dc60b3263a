"""Helpers to speak raw bytes to a sans-IO connection in tests."""

from __future__ import annotations

import json
from typing import Any

from rtrain.protocol.connection import Connection
from rtrain.protocol.framing import FrameReader, encode_frame
from rtrain.protocol.version import PROTOCOL_VERSION


def frame(message: Any) -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return encode_frame(body)


def replies(conn: Connection) -> list[Any]:
    """Decode every frame queued by `conn` into JSON values."""
    data = conn.data_to_send()
    reader = FrameReader()
    return [json.loads(body) for body in reader.feed(data)]


def initialized_server() -> Connection:
    server = Connection()
    server.receive_data(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": PROTOCOL_VERSION},
            }
        )
    )
    server.send_result(0, {"ok": True})
    server.data_to_send()
    return server


def request(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        message["params"] = params
    return message
