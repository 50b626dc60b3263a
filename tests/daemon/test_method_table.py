"""The daemon answers every request method the protocol lists."""

from __future__ import annotations

from rtrain.client.errors import RemoteError
from rtrain.protocol.errors import METHOD_NOT_FOUND
from rtrain.protocol.methods import REQUESTS
from rtrain.protocol.requests import Call
from tests.daemon_fixtures import DaemonEnv


def test_every_request_of_the_protocol_has_a_handler(daemon_env: DaemonEnv) -> None:
    unanswered = []
    with daemon_env.client() as client:
        # daemon/stop last: it ends the daemon. Empty params: a method with required ones
        # answers -32602 (or a refusal), which still shows that it is served.
        for method in sorted(REQUESTS, key=lambda name: name == "daemon/stop"):
            if method in ("initialize", "shutdown"):
                continue  # the client's own handshake has sent initialize
            try:
                client.call(Call(method, {}))
            except RemoteError as error:
                if error.code == METHOD_NOT_FOUND:
                    unanswered.append(method)
    assert unanswered == []
