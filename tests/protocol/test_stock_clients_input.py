"""What generic JSON-RPC and LSP clients send, and what broken peers send: each gets a
sentence naming the real problem, and the connection goes on."""

from __future__ import annotations

import json

import msgspec
import pytest

from rtrain.protocol import errors as e
from rtrain.protocol import requests, validation
from rtrain.protocol.client_connection import ClientConnection
from rtrain.protocol.connection import Connection
from rtrain.protocol.events import Request
from rtrain.protocol.framing import encode_frame
from rtrain.protocol.lifecycle import State
from rtrain.protocol.messages import byte_progress
from rtrain.protocol.version import PROTOCOL_VERSION

from .wire import frame, initialized_server, replies, request


def still_serves(server: Connection) -> None:
    events = server.receive_data(frame(request(99, "daemon/info")))
    assert [(ev.id, ev.method) for ev in events if isinstance(ev, Request)] == [(99, "daemon/info")]
    assert not server.broken


def test_invalid_utf8_inside_params_is_a_parse_error_for_that_request() -> None:
    server = initialized_server()
    body = b'{"jsonrpc":"2.0","id":7,"method":"run/status","params":{"host":"\xff","runId":"a"}}'
    server.receive_data(frame(body))
    [reply] = replies(server)
    assert reply["id"] == 7
    assert reply["error"]["code"] == e.PARSE_ERROR
    assert "not valid UTF-8" in reply["error"]["message"]
    still_serves(server)


@pytest.mark.parametrize("where", ["params", "top"])
def test_a_lone_surrogate_is_named_as_such(where: str) -> None:
    server = initialized_server()
    if where == "params":
        body = rb'{"jsonrpc":"2.0","id":3,"method":"run/status",'
        body += rb'"params":{"host":"\ud800","runId":"a"}}'
    else:
        body = rb'{"jsonrpc":"2.0","id":3,"method":"run/st\udc00atus"}'
    server.receive_data(frame(body))
    [reply] = replies(server)
    assert reply["error"]["code"] == e.PARSE_ERROR
    assert "lone surrogate" in reply["error"]["message"]
    assert "truncated" not in reply["error"]["message"]
    still_serves(server)


@pytest.mark.parametrize("depth", [1_000, 100_000])
@pytest.mark.parametrize("where", ["params", "top", "batch"])
def test_deep_nesting_is_refused_with_an_error_and_the_connection_goes_on(
    depth: int, where: str
) -> None:
    server = initialized_server()
    deep = b"[" * depth + b"]" * depth
    body = {
        "params": b'{"jsonrpc":"2.0","id":4,"method":"run/status","params":{"host":%s}}' % deep,
        "top": deep,
        "batch": b"[" + deep + b"]",
    }[where]
    server.receive_data(frame(body))
    [reply] = replies(server)
    error = (reply[0] if isinstance(reply, list) else reply)["error"]
    assert error["code"] in (e.PARSE_ERROR, e.INVALID_REQUEST, e.INVALID_PARAMS)
    if where != "batch":
        assert "nested too deeply" in error["message"]
    still_serves(server)


@pytest.mark.parametrize(
    "content_type",
    [
        b"application/vscode-jsonrpc",
        b"application/json",
        b"application/vscode-jsonrpc; charset=utf-8",
        b"application/vscode-jsonrpc; charset=UTF8",
        b'application/json; charset="utf-8"',
    ],
)
def test_a_content_type_without_a_charset_or_with_utf8_is_accepted(content_type: bytes) -> None:
    server = initialized_server()
    body = json.dumps(request(1, "daemon/info")).encode()
    head = b"Content-Length: %d\r\nContent-Type: %s\r\n\r\n" % (len(body), content_type)
    [event] = server.receive_data(head + body)
    assert isinstance(event, Request) and not server.broken


def test_a_charset_other_than_utf8_is_refused_naming_it() -> None:
    server = initialized_server()
    body = json.dumps(request(1, "daemon/info")).encode()
    head = b"Content-Length: %d\r\nContent-Type: application/json; charset=latin-1\r\n\r\n"
    server.receive_data(head % len(body) + body)
    [reply] = replies(server)
    assert server.broken
    assert reply["error"]["code"] == e.PARSE_ERROR
    assert "latin-1" in reply["error"]["message"]


def test_an_lsp_initialize_is_accepted_and_means_the_current_version() -> None:
    server = Connection()
    lsp_params = {
        "processId": None,
        "clientInfo": {"name": "some-editor", "version": "1.2"},
        "rootUri": None,
        "capabilities": {"window": {"workDoneProgress": True}},
        "trace": "off",
        "workspaceFolders": None,
    }
    [event] = server.receive_data(frame(request(1, "initialize", lsp_params)))
    assert isinstance(event, Request)
    assert event.params.protocol_version is None
    assert event.params.client_info.name == "some-editor"
    server.send_result(1, {"protocolVersion": PROTOCOL_VERSION})
    assert server.state is State.READY


def test_methods_other_than_initialize_still_refuse_unknown_fields() -> None:
    server = initialized_server()
    server.receive_data(frame(request(1, "run/status", {"host": "h", "runId": "r", "rootUri": 1})))
    [reply] = replies(server)
    assert reply["error"]["code"] == e.INVALID_PARAMS
    assert "rootUri" in reply["error"]["message"]


@pytest.mark.parametrize(
    ("bad_id", "named"),
    [("1.5", "a number with a fraction"), ("true", "a boolean"), ('{"a":1}', "an object")],
)
def test_a_bad_id_type_is_named(bad_id: str, named: str) -> None:
    server = initialized_server()
    message = b'{"jsonrpc":"2.0","id":%s,"method":"daemon/info"}' % bad_id.encode()
    server.receive_data(frame(message))
    [reply] = replies(server)
    assert reply["id"] is None
    assert reply["error"]["code"] == e.INVALID_REQUEST
    assert "an id is an integer or a string" in reply["error"]["message"]
    assert named in reply["error"]["message"]


@pytest.mark.parametrize("host", [".x", "@.x", "-x"])
def test_invalid_host_says_what_it_may_start_with(host: str) -> None:
    with pytest.raises(e.RpcError) as refused:
        validation.host_or_pool(host)
    assert refused.value.kind == e.Kind.INVALID_HOST
    assert "starting with a letter, digit or underscore" in refused.value.message


def test_a_pool_where_a_host_is_needed_says_so() -> None:
    with pytest.raises(e.RpcError) as refused:
        validation.host("@lab")
    assert refused.value.kind == e.Kind.INVALID_HOST
    assert "@lab is a pool, not a host" in refused.value.message
    assert validation.host_or_pool("@lab") == "@lab"


def test_a_client_cannot_send_a_request_before_initialize() -> None:
    client = ClientConnection()
    with pytest.raises(e.LocalProtocolError, match="initialize"):
        client.send_request(requests.daemon_info())
    assert client.data_to_send() == b""


def test_a_client_waits_for_the_answer_to_initialize() -> None:
    client = ClientConnection()
    client.send_request(requests.initialize(protocol_version=PROTOCOL_VERSION))
    with pytest.raises(e.LocalProtocolError):
        client.send_request(requests.daemon_info())
    with pytest.raises(e.LocalProtocolError):
        client.send_notification(requests.initialized())
    client.data_to_send()
    answer = {
        "protocolVersion": PROTOCOL_VERSION,
        "serverInfo": {"name": "rtrain", "version": "x"},
        "capabilities": {"methods": [], "notifications": []},
    }
    client.receive_data(frame({"jsonrpc": "2.0", "id": 1, "result": answer}))
    assert client.state is State.READY
    client.send_notification(requests.initialized())
    client.send_request(requests.daemon_info())


def test_a_client_that_sent_shutdown_cannot_send_more_requests() -> None:
    client = ClientConnection()
    client.state = State.READY
    client.send_request(requests.shutdown())
    with pytest.raises(e.LocalProtocolError, match="shutting down"):
        client.send_request(requests.daemon_info())
    client.send_notification(requests.exit())
    assert client.state is State.EXITED


def test_progress_has_lsp_shape_with_the_byte_counts_inside_value() -> None:
    wire = json.loads(msgspec.json.encode(byte_progress("up", "report", "Shipping", 250, 1000)))
    assert wire == {
        "token": "up",
        "value": {
            "kind": "report",
            "title": "Shipping",
            "percentage": 25,
            "doneBytes": 250,
            "totalBytes": 1000,
        },
    }


def test_frames_are_read_whatever_the_header_order() -> None:
    server = initialized_server()
    body = json.dumps(request(1, "daemon/info")).encode()
    data = b"Content-Type: application/vscode-jsonrpc\r\n" + encode_frame(body)
    assert len(server.receive_data(data)) == 1
