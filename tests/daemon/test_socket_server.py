"""The daemon over its real Unix socket: start-up, races, hostile input, permissions."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rtrain.client import daemon_client
from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import DaemonUnavailable, RemoteError
from rtrain.protocol.framing import FrameReader, encode_frame
from rtrain.protocol.version import PROTOCOL_VERSION
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import GPU_USER, TestHosts


def init_frame(msg_id: int = 1) -> bytes:
    return encode_frame(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": msg_id,
                "method": "initialize",
                "params": {"protocolVersion": PROTOCOL_VERSION},
            }
        ).encode()
    )


def read_replies(sock: socket.socket, count: int) -> list[dict[str, Any]]:
    reader = FrameReader()
    replies: list[dict[str, Any]] = []
    while len(replies) < count:
        data = sock.recv(65536)
        if not data:
            break
        replies += [json.loads(body) for body in reader.feed(data)]
    return replies


def test_the_first_client_starts_the_daemon_and_it_reports_itself(daemon_env: DaemonEnv) -> None:
    with daemon_env.client() as client:
        info = client.request("daemon/info")
    assert info.socket_path == str(daemon_env.socket)
    assert daemon_env.daemon_pids() == [info.pid]
    mode = stat.S_IMODE(os.stat(daemon_env.socket).st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(os.stat(daemon_env.socket.parent).st_mode) == 0o700
    assert "listening" in daemon_env.log.read_text()


def test_ten_clients_starting_at_once_end_with_exactly_one_daemon(daemon_env: DaemonEnv) -> None:
    pids: list[int] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            with DaemonClient.connect() as client:
                pids.append(client.request("daemon/info").pid)
        except BaseException as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=one) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert len(set(pids)) == 1
    deadline = time.monotonic() + 15  # losers of the race exit by themselves
    while daemon_env.daemon_pids() != [pids[0]] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert daemon_env.daemon_pids() == [pids[0]]


def test_without_spawn_a_missing_daemon_is_a_clear_error(daemon_env: DaemonEnv) -> None:
    with pytest.raises(DaemonUnavailable, match="No rtrain daemon is running"):
        DaemonClient.connect(spawn=False)
    assert daemon_env.daemon_pids() == []


def test_a_stale_socket_from_a_dead_daemon_is_replaced(daemon_env: DaemonEnv) -> None:
    daemon_env.socket.parent.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(daemon_env.socket))
    dead.close()  # the file stays, nobody listens: what a kill -9 leaves behind
    with daemon_env.client() as client:
        assert client.request("daemon/info").pid in daemon_env.daemon_pids()


def test_a_socket_directory_open_to_others_is_refused(daemon_env: DaemonEnv) -> None:
    shared = daemon_env.runtime / "rtrain"
    shared.mkdir(mode=0o700)
    shared.chmod(0o755)
    proc = subprocess.run(
        [sys.executable, "-m", "rtrain.daemon"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    assert "must be 0700" in proc.stderr and "chmod 700" in proc.stderr
    assert not daemon_env.socket.exists()


def test_another_uid_is_refused_even_when_the_socket_is_reachable(
    daemon_env: DaemonEnv, ssh_hosts: TestHosts
) -> None:  # noqa: ANN001
    with daemon_env.client() as client:
        client.request("daemon/info")
    # Open the path up on purpose: only SO_PEERCRED stands between the other user and us.
    for path in (daemon_env.root, daemon_env.runtime, daemon_env.socket.parent):
        path.chmod(0o711)
    daemon_env.socket.chmod(0o666)
    probe = (
        "import socket,sys,time\n"
        "s=socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1])\n"
        "time.sleep(0.3)\n"
        "try:\n"
        "    s.sendall(sys.stdin.buffer.read()); print('answer', s.recv(100))\n"
        "except (BrokenPipeError, ConnectionResetError):\n"
        "    print('answer', b'')\n"
    )
    # The system python: the test runner's own may live where the other user cannot go.
    proc = ssh_hosts.run_as(
        GPU_USER,
        ["/usr/bin/python3", "-c", probe, str(daemon_env.socket)],
        input=init_frame().decode(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "answer b''"  # closed without a word
    assert "refused a connection from uid" in daemon_env.log.read_text()
    with daemon_env.client() as client:  # and we are still served
        assert client.request("daemon/info").clients >= 1


@pytest.mark.parametrize(
    ("garbage", "answered"),
    [
        (b"\x00\xff" * 5000, "Framing error: header block too long"),
        (b"Content-Length: 5\r\n\r\n{nope", "Parse error"),
        (b"Content-Length: 99999999999\r\n\r\n", "Framing error: frame of 99999999999 bytes"),
        (b"Content-Length: 3\r\n\r\n\xff\xfe\xfd", "Parse error: the text is not valid UTF-8"),
        (b'Content-Length: 100\r\n\r\n{"jsonrpc": "2.0"', None),  # ends mid-frame
    ],
)
def test_garbage_on_one_connection_never_hurts_another(
    daemon_env: DaemonEnv, garbage: bytes, answered: str | None
) -> None:
    with daemon_env.client() as watcher:
        daemon = watcher.request("daemon/info").pid
        bad = daemon_env.raw_socket()
        bad.sendall(garbage)
        bad.shutdown(socket.SHUT_WR)
        # The daemon read it all: it answers what it could read, then, at the end of the
        # bytes, closes its side (EOF here).
        replies = read_replies(bad, 2)
        if answered is None:
            assert replies == []
        else:
            [reply] = replies
            assert reply["id"] is None and reply["error"]["code"] == -32700
            assert reply["error"]["message"].startswith(answered), reply
        assert bad.recv(1) == b""
        assert watcher.request("daemon/info").pid == daemon
        assert daemon_env.daemon_pids() == [daemon]
    with daemon_env.client() as fresh:
        assert fresh.request("daemon/info").pid == daemon


def test_a_parse_error_is_answered_and_the_same_connection_goes_on(daemon_env: DaemonEnv) -> None:
    with daemon_env.client():
        pass
    sock = daemon_env.raw_socket()
    sock.sendall(init_frame(1))
    assert read_replies(sock, 1)[0]["id"] == 1  # requests wait for initialize's answer
    sock.sendall(
        encode_frame(b"{not json")
        + encode_frame(b'{"jsonrpc":"2.0","id":2,"method":"daemon/info"}')
    )
    by_id = {reply["id"]: reply for reply in read_replies(sock, 2)}
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["result"]["pid"] > 0


def start_sleeper(client: DaemonClient, tmp_path: Path, run_id: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("steps: 1\n")
    client.request(
        "run/start",
        {
            "host": "local",
            "config": str(config),
            "runId": run_id,
            "workdir": str(tmp_path / "runs"),
            "command": ["{python}", "-c", "import time; print('up', flush=True); time.sleep(30)"],
        },
    )


@pytest.mark.parametrize("same_read", [False, True])
def test_cancel_request_really_cancels_and_answers_32800(
    daemon_env: DaemonEnv, tmp_path: Path, same_read: bool
) -> None:
    run_id = f"cancel-{int(same_read)}"
    with daemon_env.client() as client:
        start_sleeper(client, tmp_path, run_id)
    sock = daemon_env.raw_socket()
    sock.sendall(init_frame(1))
    read_replies(sock, 1)
    tail = encode_frame(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "run/tail",
                "params": {"host": "local", "runId": run_id, "workdir": str(tmp_path / "runs")},
            }
        ).encode()
    )
    cancel = encode_frame(
        json.dumps({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}).encode()
    )
    if same_read:  # cancelled before the handler ever ran
        sock.sendall(tail + cancel)
    else:
        sock.sendall(tail)
        replies = read_replies(sock, 1)  # the first log chunk: the tail is under way
        assert replies[0]["method"] == "run/log"
        sock.sendall(cancel)
    answer = None
    while answer is None:
        answer = next((r for r in read_replies(sock, 1) if r.get("id") == 2), None)
    assert answer["error"]["code"] == -32800
    with daemon_env.client() as client:  # the run itself goes on
        status = client.request(
            "run/status", {"host": "local", "runId": run_id, "workdir": str(tmp_path / "runs")}
        )
        assert status.run.state == "running"
        client.request(
            "run/stop",
            {"host": "local", "runId": run_id, "grace": 1, "workdir": str(tmp_path / "runs")},
        )


def test_a_daemon_of_another_version_is_replaced_once(
    daemon_env: DaemonEnv, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with daemon_env.client() as client:
        old_pid = client.request("daemon/info").pid
    monkeypatch.setattr(daemon_client, "RTRAIN_VERSION", "0.0.0-older")
    with daemon_env.client() as client:
        new_pid = client.request("daemon/info").pid
    assert new_pid != old_pid
    assert "restarting the daemon" in capsys.readouterr().err
    assert daemon_env.daemon_pids() == [new_pid]


def test_daemon_stop_stops_it_and_the_socket_goes(daemon_env: DaemonEnv) -> None:
    with daemon_env.client() as client:
        client.request("daemon/stop")
    deadline = time.monotonic() + 10
    while daemon_env.daemon_pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert daemon_env.daemon_pids() == []
    assert not daemon_env.socket.exists()


def test_an_error_answer_carries_its_kind(daemon_env: DaemonEnv) -> None:
    with daemon_env.client() as client:
        with pytest.raises(RemoteError) as refused:
            client.request("run/status", {"host": "local", "runId": "x;y"})
        assert (refused.value.code, refused.value.kind) == (-32000, "invalid_run_id")
        assert refused.value.data["kind"] == "invalid_run_id"
        assert "'x;y'" in refused.value.message
        with pytest.raises(RemoteError) as missing:
            client.request("run/status", {"host": "local", "runId": "no-such-run"})
        assert (missing.value.kind, missing.value.data.get("runId")) == (
            "run_not_found",
            "no-such-run",
        )
        # A protocol error (bad params) is no application error: no kind, its own code.
        with pytest.raises(RemoteError) as invalid:
            client.request("runs/list", {"state": "sleeping"})
        assert (invalid.value.code, invalid.value.kind) == (-32602, None)
