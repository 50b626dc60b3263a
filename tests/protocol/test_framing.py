"""LSP base framing: split input, header variants, malformed and oversize frames."""

from __future__ import annotations

import pytest

from rtrain.protocol.errors import PARSE_ERROR
from rtrain.protocol.events import ConnectionBroken, Request
from rtrain.protocol.framing import FrameReader, FramingError, encode_frame

from .wire import frame, initialized_server, replies, request


def test_a_frame_split_at_every_byte_boundary_yields_the_same_messages() -> None:
    data = frame(request(1, "run/status", {"host": "gpu", "runId": "r1"})) + frame(
        request("two", "daemon/info")
    )
    for cut in range(len(data) + 1):
        server = initialized_server()
        events = server.receive_data(data[:cut]) + server.receive_data(data[cut:])
        assert [(e.id, e.method) for e in events if isinstance(e, Request)] == [
            (1, "run/status"),
            ("two", "daemon/info"),
        ]


def test_byte_by_byte_feeding_keeps_unicode_intact() -> None:
    server = initialized_server()
    data = frame(request(1, "run/status", {"host": "gpu", "runId": "r1", "workdir": "~/été"}))
    events = []
    for i in range(len(data)):
        events += server.receive_data(data[i : i + 1])
    assert len(events) == 1
    assert isinstance(events[0], Request)
    assert events[0].params.workdir == "~/été"


@pytest.mark.parametrize(
    "headers",
    [
        b"content-length: %d\r\n\r\n",
        b"CONTENT-LENGTH:%d\r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
        b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf8\r\n\r\n",
    ],
)
def test_header_names_are_case_insensitive_and_in_any_order(headers: bytes) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"daemon/info"}'
    server = initialized_server()
    events = server.receive_data(headers % len(body) + body)
    assert [e.method for e in events if isinstance(e, Request)] == ["daemon/info"]


@pytest.mark.parametrize(
    "bad",
    [
        b"Content-Length: ten\r\n\r\n{}",
        b"Content-Type: text/plain\r\n\r\n{}",
        b"Content-Length: 2\r\nContent-Type: application/json; charset=latin-1\r\n\r\n{}",
        b"no colon here\r\n\r\n{}",
        b"Content-L\xe9ngth: 2\r\n\r\n{}",
        b"X" * 10000,
    ],
)
def test_a_malformed_header_breaks_the_connection_with_a_parse_error(bad: bytes) -> None:
    server = initialized_server()
    events = server.receive_data(bad)
    assert isinstance(events[-1], ConnectionBroken)
    [reply] = replies(server)
    assert reply["error"]["code"] == PARSE_ERROR and reply["id"] is None
    assert server.receive_data(frame(request(1, "daemon/info"))) == []


def test_an_oversize_frame_is_refused_before_its_body_is_buffered() -> None:
    reader = FrameReader(max_frame=1024)
    with pytest.raises(FramingError, match="exceeds the limit"):
        reader.feed(b"Content-Length: 1025\r\n\r\n")
    default = FrameReader()
    with pytest.raises(FramingError):
        default.feed(b"Content-Length: %d\r\n\r\n" % (64 * 1024 * 1024 + 1))
    assert default.pending < 100


def test_frames_before_a_bad_header_are_still_delivered() -> None:
    server = initialized_server()
    events = server.receive_data(frame(request(7, "daemon/info")) + b"garbage\r\n\r\n")
    assert isinstance(events[0], Request) and events[0].id == 7
    assert isinstance(events[1], ConnectionBroken)


def test_encode_frame_counts_bytes_not_characters() -> None:
    body = '{"x":"€"}'.encode()
    assert encode_frame(body).startswith(b"Content-Length: %d\r\n" % len(body))
