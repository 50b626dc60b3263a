"""Hostile and heavy use of the daemon's socket: fuzzed params for every method, many
clients at once, a big registry. The daemon must survive, stay correct, stay small."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import RemoteError
from rtrain.protocol.framing import FrameReader, encode_frame
from rtrain.protocol.methods import METHODS
from rtrain.protocol.version import PROTOCOL_VERSION
from tests.daemon_fixtures import DaemonEnv

# Params that would make the daemon act for real are kept local: every ssh alias resolves to
# a closed port on 127.0.0.1, and the far side of `local` is a private temp workdir.
REQUESTS = sorted(
    name
    for name, m in METHODS.items()
    if not m.is_notification
    and m.direction == "client->server"
    and name not in ("initialize", "shutdown", "daemon/stop")
)
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [
    "host",
    "runId",
    "path",
    "dest",
    "config",
    "dataset",
    "workdir",
    "python",
    "gpus",
    "offset",
    "follow",
    "force",
    "grace",
    "command",
    "secrets",
    "state",
    "subscribe",
]


@pytest.fixture
def closed_world(
    daemon_env: DaemonEnv, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ssh_hosts: Any
) -> DaemonEnv:
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  HostName 127.0.0.1\n  Port {ssh_hosts.closed_port}\n")
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(config))
    return daemon_env


def params_for(method: str) -> st.SearchStrategy[Any]:
    plausible = st.fixed_dictionaries(
        {},
        optional={
            name: st.one_of(
                JSON,
                st.sampled_from(
                    [
                        "local",
                        "x;touch /tmp/p",
                        "$(id)",
                        "../e",
                        "-oProxyCommand=x",
                        "",
                        "~",
                        "a" * 300,
                    ]
                ),
            )
            for name in FIELDS
        },
    )
    return st.one_of(JSON, plausible)


def exchange(sock: socket.socket, reader: FrameReader, message: bytes) -> list[Any]:
    sock.sendall(encode_frame(message))
    replies: list[Any] = []
    while not replies:
        data = sock.recv(65536)
        if not data:
            return []
        replies = [json.loads(body) for body in reader.feed(data)]
    return replies


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_fuzzed_params_for_every_method_never_take_the_daemon_down(
    closed_world: DaemonEnv, data: st.DataObject
) -> None:
    with DaemonClient.connect() as client:  # the daemon is up (hypothesis reuses it)
        pid = client.request("daemon/info").pid
    sock = closed_world.raw_socket()
    reader = FrameReader()
    exchange(
        sock,
        reader,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": PROTOCOL_VERSION},
            }
        ).encode(),
    )
    for index in range(3):
        method = data.draw(st.sampled_from(REQUESTS))
        params = data.draw(params_for(method))
        message = {"jsonrpc": "2.0", "id": index + 1, "method": method, "params": params}
        if method == "run/tail" and isinstance(params, dict):
            params["follow"] = False  # an endless tail would only be a slow test
        replies = exchange(sock, reader, json.dumps(message).encode())
        assert replies, f"the daemon closed the connection on {message}"
        assert replies[0].get("id") in (index + 1, None)
        assert "result" in replies[0] or replies[0]["error"]["code"] in (
            -32602,
            -32600,
            -32000,
            -32603,
        )
        if "error" in replies[0]:
            assert replies[0]["error"]["code"] != -32603, replies[0]  # no internal error
    sock.close()
    with DaemonClient.connect() as client:
        assert client.request("daemon/info").pid == pid


def seed_registry(env: DaemonEnv, hosts: int, runs: int) -> None:
    """Write `runs` finished runs over `hosts` aliases straight into the registry file."""
    with DaemonClient.connect() as client:  # let the daemon create the schema
        client.request("runs/list")
    db = sqlite3.connect(env.state / "rtrain" / "registry.sqlite3")
    states = ["completed", "failed", "stopped", "lost"]
    now = time.time()
    db.executemany(
        "INSERT INTO runs (host, run_id, state, remote_dir, exit_code, created_at, started_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (
                f"host{i % hosts:02d}",
                f"run-{i:05d}",
                states[i % 4],
                f"/w/run-{i:05d}",
                None if states[i % 4] != "failed" else 3,
                now - i,
                now - i,
            )
            for i in range(runs)
        ],
    )
    db.commit()
    db.close()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_hundred_clients_at_once_over_a_thousand_runs_get_right_answers(
    closed_world: DaemonEnv,
) -> None:
    seed_registry(closed_world, hosts=20, runs=1000)
    with DaemonClient.connect() as client:
        pid = client.request("daemon/info").pid
    errors: list[BaseException] = []
    counts: list[tuple[int, int, int]] = []
    barrier = threading.Barrier(100)

    def one(index: int) -> None:
        try:
            with DaemonClient.connect(timeout=60) as client:
                barrier.wait(30)
                host = f"host{index % 20:02d}"
                everything = client.request("runs/list")
                mine = client.request("runs/list", {"host": host})
                failed = client.request("runs/list", {"host": host, "state": "failed"})
                assert {r.host for r in mine.runs} == {host}
                assert all(r.exit_code == 3 for r in failed.runs)
                counts.append((len(everything.runs), len(mine.runs), len(failed.runs)))
        except BaseException as error:  # collected and asserted below
            errors.append(error)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert len(counts) == 100
    assert {c[0] for c in counts} == {1000}
    assert {c[1] for c in counts} == {50}
    # run i is on host i % 20 and failed when i % 4 == 1: hosts 1, 5, 9, 13, 17 hold them all
    expected_failed = {h: 50 if h % 4 == 1 else 0 for h in range(20)}
    assert sorted(c[2] for c in counts) == sorted(expected_failed[i % 20] for i in range(100))
    assert rss_kib(pid) < 100 * 1024


def test_a_subscriber_sees_every_change_while_others_hammer_the_daemon(
    closed_world: DaemonEnv, tmp_path: Path
) -> None:
    changes: list[Any] = []
    config = tmp_path / "c.yaml"
    config.write_text("steps: 1\n")
    with DaemonClient.connect() as watcher:
        watcher.request("runs/list", {"subscribe": True})
        with DaemonClient.connect() as actor:
            for i in range(5):
                actor.request(
                    "run/start",
                    {
                        "host": "local",
                        "config": str(config),
                        "runId": f"sub-{i}",
                        "workdir": str(tmp_path / "w"),
                        "command": ["true"],
                    },
                )
        # run/changed arrives as notifications on the watcher's connection
        deadline = time.monotonic() + 30
        watcher._sock.settimeout(1)
        while (
            time.monotonic() < deadline
            and len({c.run.run_id for c in changes if c.run.state == "completed"}) < 5
        ):
            try:
                watcher.request(
                    "daemon/info",
                    on_notification=lambda m, p: changes.append(p) if m == "run/changed" else None,
                )
            except RemoteError:
                pass
            time.sleep(0.2)
    done = {c.run.run_id for c in changes if c.run.state == "completed"}
    assert done == {f"sub-{i}" for i in range(5)}
