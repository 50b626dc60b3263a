"""A flap is not a death: `rtrain tail` (following) across a killed ControlMaster resumes
from the byte it had, so what it printed is the far log exactly, nothing lost or doubled;
and the run is never called lost for it, nor for a host away for a while."""

from __future__ import annotations

import os
import signal
import socket
import time

from tests.cli.conftest import PROXIED_ALIAS as ALIAS
from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli
from tests.hosts import TcpProxy
from tests.operations.processes import process_gone, ssh_processes

# Writes numbered lines (some with multi-byte characters) until told to finish.
TRICKLE = """
import os, time
i = 0
while not os.path.exists("finish"):
    print("line %06d %s" % (i, "é€" * (i % 7) + "y" * 30), flush=True)
    i += 1
    time.sleep(0.005)
print("the end", flush=True)
"""


def master_pids(cli: Cli) -> list[int]:
    prefix = f"ControlPath={cli.daemon.runtime}/"
    return [
        pid
        for pid, argv in ssh_processes().items()
        if "-N" in argv and any(word.startswith(prefix) for word in argv)
    ]


def test_tail_across_a_killed_master_prints_the_log_byte_for_byte(cli: Cli) -> None:
    run_id = cli.new_run_id("flap")
    cli.start(run_id, "{python}", "-c", TRICKLE)
    tail = cli.spawn("tail", "plain", run_id, "--workdir", cli.workdir)
    tail.wait_for_line(lambda line: line.startswith("line 000050 "))

    [master] = master_pids(cli)
    os.kill(master, signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    while not process_gone(master):
        assert time.monotonic() < deadline, "the master survived SIGKILL"
        time.sleep(0.02)
    # Lines the run wrote after the kill arrive: the tail is on a new master.
    written = (cli.far_run_dir(run_id) / "train.log").read_text().count("\n")
    tail.wait_for_line(lambda line: line.startswith(f"line {written + 50:06d} "))
    assert master_pids(cli) and master not in master_pids(cli)
    assert cli("status", "plain", run_id).out_lines == ["running"]

    cli.finish(run_id)
    done = tail.finish()
    assert done.code == 0, done
    far = (cli.far_run_dir(run_id) / "train.log").read_bytes()
    assert far.endswith(b"the end\n")
    assert done.out.encode() == far
    assert done.err_lines[-1] == f"{run_id} on plain: completed", done


def test_a_wait_outlives_the_host_going_away_and_the_run_is_not_lost(
    cli: Cli, link: TcpProxy
) -> None:
    run_id = cli.new_run_id("away")
    cli.start(run_id, "{python}", "-c", WAITING_TRAINER, host=ALIAS)
    cli.wait_far_log(run_id, "step 1")
    wait = cli.spawn("wait", ALIAS, run_id, "--json")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    real, link.target_port = link.target_port, dead
    link.cut()
    # The host cannot be asked: the run is unknown, with why; not lost, and the wait waits.
    deadline = time.monotonic() + WAIT_S
    while True:
        status = cli("status", ALIAS, run_id, "--json").json()
        if status["state"] == "unknown":
            break
        assert status["state"] == "running", status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    assert status["reason"], status
    assert wait.process.poll() is None
    link.target_port = real
    cli.finish(run_id)
    done = wait.finish()
    assert done.code == 0, done
    assert done.json()["run"]["state"] == "completed"
