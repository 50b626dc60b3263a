"""The JSON-RPC 2.0 specification's own examples (section 7), sent to the daemon as raw
frames, byte for byte as the specification writes them, on one initialized connection.

The daemon has none of the specification's methods (`subtract`, `sum`, `update`,
`get_data`, ...), so where the specification answers with a result, the daemon answers
-32601 with the same id; every other answer (ids, codes, which messages get no answer,
batches answered as one array) is the specification's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rtrain.protocol.framing import FrameReader, encode_frame
from rtrain.protocol.version import PROTOCOL_VERSION
from tests.daemon_fixtures import DaemonEnv

NOT_FOUND, INVALID_REQUEST, PARSE_ERROR = -32601, -32600, -32700

# (what the specification sends, what the daemon answers: a list of (id, code) per reply,
# a list of such lists for a batch, or None for no answer at all)
EXAMPLES: list[tuple[str, Any]] = [
    # rpc call with positional parameters
    ('{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}', (1, NOT_FOUND)),
    ('{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}', (2, NOT_FOUND)),
    # rpc call with named parameters
    (
        '{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, '
        '"id": 3}',
        (3, NOT_FOUND),
    ),
    (
        '{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, '
        '"id": 4}',
        (4, NOT_FOUND),
    ),
    # a notification
    ('{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}', None),
    ('{"jsonrpc": "2.0", "method": "foobar"}', None),
    # rpc call of non-existent method
    ('{"jsonrpc": "2.0", "method": "foobar", "id": "1"}', ("1", NOT_FOUND)),
    # rpc call with invalid JSON
    ('{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]', (None, PARSE_ERROR)),
    # rpc call with invalid Request object
    ('{"jsonrpc": "2.0", "method": 1, "params": "bar"}', (None, INVALID_REQUEST)),
    # rpc call Batch, invalid JSON
    (
        '[\n  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n'
        '  {"jsonrpc": "2.0", "method"\n]',
        (None, PARSE_ERROR),
    ),
    # rpc call with an empty Array
    ("[]", (None, INVALID_REQUEST)),
    # rpc call with an invalid Batch (but not empty)
    ("[1]", [(None, INVALID_REQUEST)]),
    # rpc call with invalid Batch
    ("[1,2,3]", [(None, INVALID_REQUEST)] * 3),
    # rpc call Batch
    (
        "[\n"
        '  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},\n'
        '  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},\n'
        '  {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},\n'
        '  {"foo": "boo"},\n'
        '  {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},\n'
        '  {"jsonrpc": "2.0", "method": "get_data", "id": "9"}\n'
        "]",
        [("1", NOT_FOUND), ("2", NOT_FOUND), (None, INVALID_REQUEST), ("5", NOT_FOUND)]
        + [("9", NOT_FOUND)],
    ),
    # rpc call Batch (all notifications)
    (
        "[\n"
        '  {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},\n'
        '  {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}\n'
        "]",
        None,
    ),
]


class RawPeer:
    """A socket speaking frames, nothing else: what a client written from the spec sends."""

    def __init__(self, daemon_env: DaemonEnv) -> None:
        self.sock = daemon_env.raw_socket()
        self.reader = FrameReader()
        self.frames: list[bytes] = []

    def send(self, text: str) -> None:
        self.sock.sendall(encode_frame(text.encode()))

    def answer(self) -> Any:
        while not self.frames:
            data = self.sock.recv(65536)
            assert data, "the daemon closed the connection"
            self.frames += self.reader.feed(data)
        return json.loads(self.frames.pop(0))


def shape(reply: Any) -> Any:
    if isinstance(reply, list):
        return [shape(item) for item in reply]
    assert reply["jsonrpc"] == "2.0" and set(reply) == {"jsonrpc", "id", "error"}
    assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
    return (reply["id"], reply["error"]["code"])


@pytest.fixture
def peer(daemon_env: DaemonEnv) -> RawPeer:
    daemon_env.client().close()  # start the daemon
    peer = RawPeer(daemon_env)
    init = {"protocolVersion": PROTOCOL_VERSION, "clientInfo": {"name": "spec-examples"}}
    peer.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
    assert peer.answer()["result"]["protocolVersion"] == PROTOCOL_VERSION
    peer.send('{"jsonrpc": "2.0", "method": "initialized"}')
    return peer


def test_every_example_of_the_specification_gets_the_specifications_answer(peer: RawPeer) -> None:
    for sent, expected in EXAMPLES:
        peer.send(sent)
        # A marker request after each example: what arrives before its answer is the
        # example's answer, so "no answer" is checked as strictly as an answer.
        peer.send('{"jsonrpc": "2.0", "method": "daemon/info", "id": "marker"}')
        replies = []
        while True:
            reply = peer.answer()
            if isinstance(reply, dict) and reply.get("id") == "marker":
                assert "result" in reply
                break
            replies.append(shape(reply))
        if expected is None:
            assert replies == [], sent
        elif isinstance(expected, list):
            assert len(replies) == 1 and sorted(map(repr, replies[0])) == sorted(
                map(repr, expected)
            ), sent  # a batch's answers come in the order they finish
        else:
            assert replies == [expected], sent


def test_a_result_example_with_one_of_rtrains_own_methods(peer: RawPeer) -> None:
    """The named-parameters example, with a method the daemon has: a result, same id."""
    peer.send('{"jsonrpc": "2.0", "method": "runs/list", "params": {"host": "local"}, "id": 3}')
    reply = peer.answer()
    assert reply["id"] == 3 and reply["result"]["runs"] == []
    peer.send('{"jsonrpc": "2.0", "method": "runs/list", "params": ["local"], "id": 4}')
    reply = peer.answer()
    assert (reply["id"], reply["error"]["code"]) == (4, -32602)  # params by name only
