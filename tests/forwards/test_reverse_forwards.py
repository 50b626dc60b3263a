"""`rtrain forward --reverse`: a server on this machine reached by a process on the plain host
(over its ssh connection), again after the host's master is killed, and ended with its run."""

from __future__ import annotations

import functools
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rtrain import RemoteRunner
from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli
from tests.forwards.test_forwards import kill_master, master_pids
from tests.hosts import GPU_USER

HELLO = "hello from the laptop\n"
# A far process (the far user's own python) reading a URL: what it read, or why not.
FAR_GET = (
    "import sys, urllib.request\n"
    "try:\n"
    "    print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end='')\n"
    "except OSError as error:\n"
    "    print('failed:', error)\n"
)


@pytest.fixture
def laptop_server(tmp_path: Path) -> Iterator[int]:
    """An HTTP server on this machine's 127.0.0.1 serving hello.txt: its port."""
    served = tmp_path / "served"
    served.mkdir()
    (served / "hello.txt").write_text(HELLO)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield int(server.server_address[1])
        server.shutdown()


def far_get(cli: Cli, url: str) -> str:
    """What a process on the plain host reads at `url` (its own 127.0.0.1)."""
    done = cli.hosts.run_as(GPU_USER, ["python3", "-c", FAR_GET, url])
    assert done.returncode == 0, done
    return str(done.stdout)


def far_get_until(cli: Cli, url: str, expected: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while (got := far_get(cli, url)) != expected:
        assert time.monotonic() < deadline, f"{url} on the host never gave {expected!r}: {got}"
        time.sleep(0.2)


def test_a_far_process_reaches_a_server_here_again_after_the_master_is_killed(
    cli: Cli, laptop_server: int
) -> None:
    opened = cli("forward", "--reverse", "plain", str(laptop_server))
    assert opened.code == 0, opened
    (address,) = opened.out_lines
    host, far_port = address.split(":")
    assert host == "127.0.0.1"
    # The host is this machine, whose port laptop_server is taken: another number there.
    assert int(far_port) != laptop_server
    far_url = f"http://127.0.0.1:{far_port}/hello.txt"
    assert far_get(cli, far_url) == HELLO

    listed = cli("forwards", "--json")
    [row] = listed.json()
    assert (row["host"], row["remotePort"], row["localPort"], row["reverse"]) == (
        "plain",
        int(far_port),
        laptop_server,
        True,
    ), row
    table = cli("forwards")
    assert table.out_lines[1].split()[:3] == ["plain", far_port, f"127.0.0.1:{laptop_server}"]
    assert "from host" in table.out_lines[1], table

    # The connection drops: the forward comes back on the new master, on the same far port,
    # with no command run meanwhile.
    master = kill_master(cli)
    far_get_until(cli, far_url, HELLO)
    assert master not in master_pids(cli)

    again = cli("forward", "--reverse", "plain", str(laptop_server))
    assert again.out_lines == [address], again

    stopped = cli("forward", "--reverse", "plain", str(laptop_server), "--stop")
    assert stopped.code == 0, stopped
    assert far_get(cli, far_url).startswith("failed:")
    assert cli("forwards", "--json").json() == []


def test_a_reverse_forward_of_a_run_ends_with_the_run(cli: Cli, laptop_server: int) -> None:
    run_id = cli.new_run_id("rev")
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER)
    opened = cli("forward", "--reverse", "plain", str(laptop_server), "--run", run_id, "--json")
    assert opened.code == 0, opened
    info = opened.json()
    assert info["runId"] == run_id and info["reverse"] is True
    assert far_get(cli, f"{info['url']}hello.txt") == HELLO

    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    deadline = time.monotonic() + WAIT_S
    while cli("forwards", "--json").json():
        assert time.monotonic() < deadline, "the run's reverse forward outlived the run"
        time.sleep(0.2)
    assert far_get(cli, f"{info['url']}hello.txt").startswith("failed:")


def test_nothing_listening_here_is_one_sentence_before_any_ssh(cli: Cli) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        idle = probe.getsockname()[1]  # bound, never listening
        done = cli("forward", "--reverse", "plain", str(idle))
    assert done.code == 1, done
    assert done.err_lines == [
        f"rtrain: Nothing answers on port {idle} of this machine (127.0.0.1:{idle}); start the "
        "server here first, listening on 127.0.0.1 or on all addresses."
    ], done
    assert master_pids(cli) == []


def test_a_reverse_forward_to_local_is_refused(cli: Cli, laptop_server: int) -> None:
    done = cli("forward", "--reverse", "local", str(laptop_server))
    assert done.code == 2, done
    assert "is this machine" in done.err, done


# A trainer that reads the laptop's server at its start, through the port its environment
# names (the host here is this machine, where the laptop's own port is taken), then waits.
REACHING_TRAINER = """
import os, sys, time, urllib.request
port = os.environ["RTRAIN_REVERSE_PORT_" + sys.argv[1]]
url = "http://127.0.0.1:%s/hello.txt" % port
print("read:", urllib.request.urlopen(url, timeout=10).read().decode(), end="", flush=True)
while not os.path.exists("finish"):
    time.sleep(0.05)
os.remove("finish")
"""


def far_log_count(cli: Cli, run_id: str, text: str, count: int) -> None:
    log = cli.far_run_dir(run_id) / "train.log"
    deadline = time.monotonic() + WAIT_S
    while not (log.exists() and log.read_text(errors="replace").count(text) >= count):
        assert time.monotonic() < deadline, f"{text!r} never reached {log} {count} times"
        time.sleep(0.05)


def wait_no_forwards(cli: Cli) -> None:
    deadline = time.monotonic() + WAIT_S
    while cli("forwards", "--json").json():
        assert time.monotonic() < deadline, "the run's reverse forward outlived the run"
        time.sleep(0.2)


def test_a_run_started_with_reverse_reaches_the_server_from_its_start_and_after_a_restart(
    cli: Cli, laptop_server: int
) -> None:
    run_id = cli.new_run_id("revstart")
    port = str(laptop_server)
    cli.start(run_id, "{python}", "-c", REACHING_TRAINER, port, reverse=port)
    read = f"read: {HELLO}"
    far_log_count(cli, run_id, read, 1)  # its first request, made as it started
    [row] = cli("forwards", "--json").json()
    assert (row["runId"], row["localPort"], row["reverse"]) == (run_id, laptop_server, True)
    far_url = f"{row['url']}hello.txt"

    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    wait_no_forwards(cli)  # ended with the run
    assert far_get(cli, far_url).startswith("failed:")

    restarted = cli("restart", "plain", run_id, "--workdir", cli.workdir, "--no-follow")
    assert restarted.code == 0, restarted
    far_log_count(cli, run_id, read, 2)  # the new attempt reached it too, on the same port
    [again] = cli("forwards", "--json").json()
    assert (again["runId"], again["remotePort"]) == (run_id, row["remotePort"]), again
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    wait_no_forwards(cli)


def test_reverse_with_nothing_listening_here_starts_nothing(cli: Cli) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        idle = probe.getsockname()[1]  # bound, never listening
        run_id = cli.new_run_id("revidle")
        done = cli(
            "start", "plain", "--run-id", run_id, "--workdir", cli.workdir, "--gpus", "0",
            "--reverse", str(idle), "--no-follow", "--", "python3", "-c", "print(1)",
        )  # fmt: skip
    assert done.code == 1, done
    assert done.err_lines == [
        f"rtrain: Nothing answers on port {idle} of this machine (127.0.0.1:{idle}); start the "
        "server here first, listening on 127.0.0.1 or on all addresses."
    ], done
    assert not cli.far_run_dir(run_id).exists()
    assert cli("forwards", "--json").json() == []


def test_the_api_starts_a_run_with_a_reverse_forward(cli: Cli, laptop_server: int) -> None:
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    run_id = cli.new_run_id("revapi")
    port = str(laptop_server)
    command = ["{python}", "-c", REACHING_TRAINER, port]
    runner.start(run_id=run_id, gpus=0, command=command, reverse=[laptop_server])
    far_log_count(cli, run_id, f"read: {HELLO}", 1)
    [row] = cli("forwards", "--json").json()
    assert (row["runId"], row["localPort"]) == (run_id, laptop_server), row
    cli.finish(run_id)
    cli.wait_state("plain", run_id, "completed")
    wait_no_forwards(cli)
