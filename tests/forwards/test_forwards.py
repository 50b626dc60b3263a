"""`rtrain forward`: a far `python3 -m http.server` (a run on the plain host) reached from
this machine through the host's ControlMaster, again after the master is killed, and the
refusals a user meets (a busy local port, a far port nothing listens on)."""

from __future__ import annotations

import functools
import http.server
import os
import signal
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from rtrain.client.daemon_client import DaemonClient
from tests.cli.conftest import QUICK_DEMO_CONFIG, WAIT_S, Cli
from tests.hosts.sshd import free_port
from tests.operations.processes import process_gone, ssh_processes


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=WAIT_S) as answer:
        body: bytes = answer.read()
        return body.decode()


def refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def master_pids(cli: Cli) -> list[int]:
    prefix = f"ControlPath={cli.daemon.runtime}/"
    return [
        pid
        for pid, argv in ssh_processes().items()
        if "-N" in argv and any(word.startswith(prefix) for word in argv)
    ]


def kill_master(cli: Cli) -> int:
    """SIGKILL the host's one ControlMaster (a dropped connection): its pid, once gone."""
    [master] = master_pids(cli)
    os.kill(master, signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    while not process_gone(master):
        assert time.monotonic() < deadline, "the master survived SIGKILL"
        time.sleep(0.02)
    return master


def serve(cli: Cli) -> tuple[str, int]:
    """A run on `plain` that serves its own directory over HTTP on a free far port."""
    run_id = cli.new_run_id("web")
    port = free_port()
    cli.start(run_id, "{python}", "-m", "http.server", str(port), "--bind", "127.0.0.1")
    cli.wait_far_log(run_id, "Serving HTTP")
    return run_id, port


def test_a_far_web_server_is_reached_and_again_after_the_master_is_killed(cli: Cli) -> None:
    run_id, port = serve(cli)
    opened = cli("forward", "plain", str(port), "--run", run_id)
    assert opened.code == 0, opened
    (url,) = opened.out_lines
    assert url.startswith("http://127.0.0.1:") and url.endswith("/"), opened
    local = int(url.rsplit(":", 1)[1].strip("/"))
    # The far port's own number is taken here (the far host is this machine): another one.
    assert local != port
    assert get(url + "config.yaml") == QUICK_DEMO_CONFIG

    listed = cli("forwards", "--json")
    assert listed.code == 0, listed
    [row] = listed.json()
    assert (row["host"], row["remotePort"], row["localPort"]) == ("plain", port, local)
    assert row["url"] == url and row["runId"] == run_id and row["since"] > 0
    table = cli("forwards")
    assert table.out_lines[0].split()[:5] == ["HOST", "PORT", "LOCAL", "RUN", "SINCE"], table
    assert table.out_lines[1].split()[:4] == ["plain", str(port), url, run_id], table

    # The connection drops: the next request through the forward brings up a new master.
    master = kill_master(cli)
    assert get(url + "config.yaml") == QUICK_DEMO_CONFIG
    assert master_pids(cli) and master not in master_pids(cli)

    # Asked again: the same forward, not a second one.
    again = cli("forward", "plain", str(port))
    assert again.out_lines == [url], again

    stopped = cli("forward", "plain", str(port), "--stop")
    assert stopped.code == 0, stopped
    assert refused(local)
    assert cli("forwards", "--json").json() == []


def test_a_forward_of_a_run_ends_when_the_run_is_removed(cli: Cli) -> None:
    run_id, port = serve(cli)
    local = free_port()
    opened = cli("forward", "plain", str(port), "--local", str(local), "--run", run_id)
    assert opened.out_lines == [f"http://127.0.0.1:{local}/"], opened
    assert get(f"http://127.0.0.1:{local}/config.yaml") == QUICK_DEMO_CONFIG
    assert cli("stop", "plain", run_id).code == 0
    assert cli("rm", "plain", run_id).code == 0
    assert cli("forwards", "--json").json() == []
    assert refused(local)


def test_forwards_end_with_the_daemon(cli: Cli) -> None:
    _, port = serve(cli)
    opened = cli("forward", "plain", str(port))
    local = int(opened.out.strip().rsplit(":", 1)[1].strip("/"))
    assert not refused(local)
    assert cli("daemon", "stop").code == 0
    assert refused(local)


def test_a_busy_local_port_is_one_sentence_before_any_ssh(cli: Cli) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        done = cli("forward", "plain", "8888", "--local", str(busy))
    assert done.code == 2, done
    assert done.out == ""
    assert done.err_lines == [
        f"rtrain: Port {busy} of this machine is in use already; choose another with --local, "
        "or leave --local out for a free one."
    ], done
    assert master_pids(cli) == []  # nothing reached the host


def test_a_far_port_with_nothing_listening_is_one_sentence(cli: Cli) -> None:
    port = free_port()
    done = cli("forward", "plain", str(port))
    assert done.code == 1, done
    (sentence,) = done.err_lines
    assert sentence.startswith(f"rtrain: Nothing answers on port {port} of plain"), done
    assert cli("forwards", "--json").json() == []


def test_a_bad_port_is_refused_by_the_cli(cli: Cli) -> None:
    done = cli("forward", "plain", "70000")
    assert done.code == 2, done
    assert done.err_lines == ["rtrain: PORT must be a port number from 1 to 65535, not 70000."]


def test_subscribers_hear_of_forwards_and_local_is_this_machine(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("from this machine\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.server_address[1]
        heard: list[Any] = []
        with DaemonClient.connect(name="rtrain-tests") as client:
            client.request("runs/list", {"subscribe": True})
            opened = cli("forward", "local", str(port), "--json")
            assert opened.code == 0, opened
            info = opened.json()
            # `local`: this machine's own port, under another number.
            assert info["localPort"] != port
            assert get(info["url"] + "hello.txt") == "from this machine\n"
            assert cli("forwards", "--stop", str(info["localPort"])).code == 0
            # Any request lets the notifications that came first through.
            client.request("daemon/info", on_notification=lambda m, p: heard.append((m, p)))
        server.shutdown()
    told = [params.forwards for method, params in heard if method == "forwards/changed"]
    assert [[fwd.local_port for fwd in listed] for listed in told] == [[info["localPort"]], []]
