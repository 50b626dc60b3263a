"""JSON-RPC 2.0 semantics of the sans-IO connection: errors, batches, ids, lifecycle."""

from __future__ import annotations

import pytest

from rtrain.protocol import errors as e
from rtrain.protocol import requests
from rtrain.protocol.client_connection import ClientConnection
from rtrain.protocol.connection import Connection
from rtrain.protocol.events import ErrorResponse, Notification, Request, Response
from rtrain.protocol.lifecycle import State
from rtrain.protocol.messages import DaemonInfo
from rtrain.protocol.version import PROTOCOL_VERSION

from .wire import frame, initialized_server, replies, request


def state_of(connection: Connection) -> State:
    # Read afresh: mypy would keep the state an earlier assert narrowed it to.
    return connection.state


def answer_codes(server: Connection, data: bytes) -> list[int]:
    server.receive_data(data)
    return [r["error"]["code"] for r in replies(server)]


def test_invalid_json_is_a_parse_error_with_a_null_id() -> None:
    server = initialized_server()
    server.receive_data(frame(b'{"jsonrpc": "2.0", "id": 1, "method": '))
    [reply] = replies(server)
    assert reply == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": e.PARSE_ERROR, "message": reply["error"]["message"]},
    }


def test_invalid_utf8_is_a_parse_error_and_the_connection_goes_on() -> None:
    server = initialized_server()
    assert answer_codes(server, frame(b'{"jsonrpc":"2.0","id":1,"method":"\xff"}')) == [
        e.PARSE_ERROR
    ]
    events = server.receive_data(frame(request(2, "daemon/info")))
    assert [ev.method for ev in events if isinstance(ev, Request)] == ["daemon/info"]
    assert len(events) == 1


@pytest.mark.parametrize(
    "message",
    [
        b"42",
        b'"x"',
        b"null",
        b'{"id": 1, "method": "daemon/info"}',
        b'{"jsonrpc": "1.0", "id": 1, "method": "daemon/info"}',
        b'{"jsonrpc": "2.0", "id": 1.5, "method": "daemon/info"}',
        b'{"jsonrpc": "2.0", "id": null, "method": "daemon/info"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": 5}',
        b'{"jsonrpc": "2.0", "id": 1}',
    ],
)
def test_malformed_requests_are_invalid_requests(message: bytes) -> None:
    assert answer_codes(initialized_server(), frame(message)) == [e.INVALID_REQUEST]


def test_unknown_method_is_method_not_found_and_names_it() -> None:
    server = initialized_server()
    server.receive_data(frame(request(3, "run/teleport")))
    [reply] = replies(server)
    assert reply["id"] == 3
    assert reply["error"]["code"] == e.METHOD_NOT_FOUND
    assert "run/teleport" in reply["error"]["message"]


def test_a_server_to_client_method_sent_to_the_server_is_not_found() -> None:
    assert answer_codes(initialized_server(), frame(request(3, "run/log"))) == [e.METHOD_NOT_FOUND]


def test_invalid_params_say_which_field() -> None:
    server = initialized_server()
    server.receive_data(frame(request(4, "host/preflight", {"host": "gpu", "gpus": "two"})))
    [reply] = replies(server)
    assert reply["error"]["code"] == e.INVALID_PARAMS
    assert "$.gpus" in reply["error"]["message"]


def test_unknown_param_fields_are_rejected_so_typos_show() -> None:
    server = initialized_server()
    server.receive_data(frame(request(4, "run/status", {"host": "h", "runId": "r", "runid": 1})))
    [reply] = replies(server)
    assert reply["error"]["code"] == e.INVALID_PARAMS and "runid" in reply["error"]["message"]


def test_positional_params_are_invalid() -> None:
    assert answer_codes(initialized_server(), frame(request(4, "daemon/info", ["x"]))) == [
        e.INVALID_PARAMS
    ]


def test_int_and_string_ids_are_echoed_exactly() -> None:
    server = initialized_server()
    events = server.receive_data(
        frame(request(2**40, "daemon/info")) + frame(request("abc", "daemon/info"))
    )
    for event in events:
        assert isinstance(event, Request)
        server.send_result(event.id, None)
    assert [r["id"] for r in replies(server)] == [2**40, "abc"]


def test_a_reused_pending_id_is_refused() -> None:
    server = initialized_server()
    server.receive_data(frame(request(1, "daemon/info")))
    assert answer_codes(server, frame(request(1, "daemon/info"))) == [e.INVALID_REQUEST]


def test_a_batch_is_answered_with_one_array_once_every_request_is_answered() -> None:
    server = initialized_server()
    events = server.receive_data(
        frame(
            [
                request(1, "daemon/info"),
                {"jsonrpc": "2.0", "method": "initialized"},
                request(2, "nope"),
                5,
                request(3, "hosts/list"),
            ]
        )
    )
    assert [ev.id for ev in events if isinstance(ev, Request)] == [1, 3]
    server.send_result(3, {"hosts": []})
    assert server.data_to_send() == b""  # still waiting for id 1
    server.send_error(1, e.app_error(e.Kind.HOST_UNREACHABLE, "nope"))
    [batch] = replies(server)
    assert isinstance(batch, list)
    by_id = {item["id"]: item for item in batch}
    assert by_id[2]["error"]["code"] == e.METHOD_NOT_FOUND
    assert by_id[None]["error"]["code"] == e.INVALID_REQUEST
    assert by_id[3]["result"] == {"hosts": []}
    assert by_id[1]["error"]["data"]["kind"] == "host_unreachable"


def test_a_batch_of_notifications_gets_no_answer_and_an_empty_batch_an_error() -> None:
    server = initialized_server()
    server.receive_data(frame([{"jsonrpc": "2.0", "method": "initialized"}]))
    assert server.data_to_send() == b""
    assert answer_codes(server, frame(b"[]")) == [e.INVALID_REQUEST]


def test_unknown_notifications_are_ignored_silently() -> None:
    server = initialized_server()
    assert server.receive_data(frame({"jsonrpc": "2.0", "method": "$/whatever"})) == []
    assert server.data_to_send() == b""


def test_requests_before_initialize_get_server_not_initialized() -> None:
    server = Connection()
    assert answer_codes(server, frame(request(1, "daemon/info"))) == [e.SERVER_NOT_INITIALIZED]


def test_lifecycle_initialize_once_then_shutdown_refuses_requests_then_exit() -> None:
    server = Connection()
    [init] = server.receive_data(frame(request(1, "initialize", {"protocolVersion": "2.3"})))
    assert server.state is State.INITIALIZING
    assert isinstance(init, Request)
    server.send_result(init.id, None)
    server.data_to_send()
    assert state_of(server) is State.READY
    assert answer_codes(server, frame(request(2, "initialize", {"protocolVersion": "1.0"}))) == [
        e.INVALID_REQUEST
    ]
    server.receive_data(frame(request(3, "shutdown")))
    server.send_result(3, None)
    server.data_to_send()
    assert answer_codes(server, frame(request(4, "daemon/info"))) == [e.INVALID_REQUEST]
    [exit_event] = server.receive_data(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert isinstance(exit_event, Notification) and state_of(server) is State.EXITED


def test_another_major_protocol_version_is_refused_naming_both() -> None:
    server = Connection()
    server.receive_data(frame(request(1, "initialize", {"protocolVersion": "1.2"})))
    [reply] = replies(server)
    assert reply["error"]["data"]["kind"] == "protocol_version_mismatch"
    assert "1.2" in reply["error"]["message"] and PROTOCOL_VERSION in reply["error"]["message"]
    assert server.state is State.NEW


def test_client_and_server_in_memory_round_trip() -> None:
    client, server = ClientConnection(), Connection()
    first = client.send_request(requests.initialize(protocol_version=PROTOCOL_VERSION))
    [req] = server.receive_data(client.data_to_send())
    assert isinstance(req, Request) and req.params.protocol_version == PROTOCOL_VERSION
    server.send_result(
        req.id,
        {
            "protocolVersion": PROTOCOL_VERSION,
            "serverInfo": {"name": "rtrain", "version": "9"},
            "capabilities": {"methods": [], "notifications": []},
        },
    )
    [resp] = client.receive_data(server.data_to_send())
    assert isinstance(resp, Response) and resp.id == first
    assert resp.result.server_info.version == "9"
    client.send_notification(requests.initialized())
    info = client.send_request(requests.daemon_info())
    [initialized, req] = server.receive_data(client.data_to_send())
    assert isinstance(initialized, Notification) and initialized.method == "initialized"
    assert isinstance(req, Request)
    server.send_result(
        req.id,
        DaemonInfo(
            pid=1,
            version="v",
            protocol_version=PROTOCOL_VERSION,
            uptime=1.0,
            socket_path="/s",
            state_dir="/d",
            log_path="/l",
            clients=2,
        ),
    )
    [resp] = client.receive_data(server.data_to_send())
    assert isinstance(resp, Response)
    assert resp.id == info and resp.result.clients == 2 and resp.result.notices == []
    server.send_notification(
        "run/log", {"host": "h", "runId": "r", "offset": 0, "nextOffset": 3, "text": "hi\n"}
    )
    [note] = client.receive_data(server.data_to_send())
    assert isinstance(note, Notification) and note.params.next_offset == 3
    cancelled = client.send_request(requests.run_status(host="h", run_id="r"))
    client.cancel(cancelled)
    events = server.receive_data(client.data_to_send())
    assert [type(ev) for ev in events] == [Request, Notification]
    server.send_error(cancelled, e.RpcError(e.REQUEST_CANCELLED, "cancelled"))
    [err] = client.receive_data(server.data_to_send())
    assert isinstance(err, ErrorResponse) and err.error.code == e.REQUEST_CANCELLED


def test_answering_twice_is_a_local_error() -> None:
    server = initialized_server()
    server.receive_data(frame(request(1, "daemon/info")))
    server.send_result(1, None)
    with pytest.raises(e.LocalProtocolError):
        server.send_result(1, None)
