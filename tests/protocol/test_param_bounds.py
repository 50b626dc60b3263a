"""Counts and seconds with natural bounds are refused by the protocol itself: -32602, the
field named, no event for the daemon to act on (so nothing reaches a host)."""

from __future__ import annotations

from typing import Any

import pytest

from rtrain.protocol import errors as e

from .wire import frame, initialized_server, replies, request


@pytest.mark.parametrize(
    "method,params,field",
    [
        ("run/start", {"host": "h", "gpus": -3}, "gpus"),
        ("run/start", {"host": "h", "gpus": 100000}, "gpus"),
        ("run/start", {"host": "h", "launcher": {"kind": "slurm", "nodes": 0}}, "launcher.nodes"),
        ("run/start", {"host": "h", "launcher": {"kind": "nodes", "nodes": 0}}, "launcher.nodes"),
        (
            "run/start",
            {"host": "h", "launcher": {"kind": "slurm", "signalBeforeTimeout": 0}},
            "launcher.signalBeforeTimeout",
        ),
        (
            "run/start",
            {"host": "h", "launcher": {"kind": "slurm", "signalBeforeTimeout": 65536}},
            "launcher.signalBeforeTimeout",
        ),
        ("run/start", {"host": "h", "maxDuration": -1}, "maxDuration"),
        ("host/preflight", {"host": "h", "gpus": -1}, "gpus"),
        ("run/tail", {"host": "h", "runId": "r", "lines": -5}, "lines"),
        ("run/exec", {"host": "h", "runId": "r", "command": ["ls"], "timeout": 0}, "timeout"),
        ("hosts/price", {"alias": "h", "pricePerHour": -1}, "pricePerHour"),
    ],
)
def test_a_value_out_of_bounds_is_invalid_params(
    method: str, params: dict[str, Any], field: str
) -> None:
    server = initialized_server()
    events = server.receive_data(frame(request(7, method, params)))
    assert events == []
    [reply] = replies(server)
    assert reply["error"]["code"] == e.INVALID_PARAMS
    assert f"$.{field}" in reply["error"]["message"]


@pytest.mark.parametrize(
    "method,params",
    [
        (
            "run/start",
            {
                "host": "h",
                "gpus": 0,
                "launcher": {"kind": "slurm", "nodes": 2, "signalBeforeTimeout": 65535},
            },
        ),
        ("host/preflight", {"host": "h", "gpus": 0}),
    ],
)
def test_a_value_at_its_bounds_is_taken(method: str, params: dict[str, Any]) -> None:
    server = initialized_server()
    [event] = server.receive_data(frame(request(7, method, params)))
    assert getattr(event, "method", None) == method
