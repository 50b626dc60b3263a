"""run/status end to end: every state a run can be in, read from the far side."""

from __future__ import annotations

import signal
import subprocess

from rtrain.client.errors import RemoteError
from tests.hosts import GPU_USER
from tests.operations import trainers
from tests.operations.harness import Ops
from tests.operations.processes import kill_run, pid_alive


def test_running_then_completed_with_start_time(ops: Ops) -> None:
    run_id = ops.new_run_id()
    started = ops.start(trainers.SLEEPER, run_id=run_id)
    running = ops.status(run_id)
    assert running.state == "running"
    assert running.exit_code is None
    assert running.started_at == started.run.started_at
    assert running.started_at is not None and running.started_at > 0

    ops.request("run/stop", {"host": "plain", "runId": run_id, "grace": 5})
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    done = ops.wait_state(run_id, lambda run: run.state != "running")
    assert (done.state, done.exit_code, done.signal) == ("completed", 0, None)


def test_failed_with_exit_code(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.EXIT_3, run_id=run_id)
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert (run.state, run.exit_code) == ("failed", 3)
    # The exit code was written whole, under its final name only.
    run_dir = ops.far_run_dir(run_id)
    assert (run_dir / ".rtrain" / "status").read_text() == "3\n"
    assert not (run_dir / ".rtrain" / "status.tmp").exists()


def test_failed_by_signal(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.KILLED_BY_SIGNAL, run_id=run_id)
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert run.state == "failed"
    assert run.signal == signal.SIGKILL
    assert run.exit_code == 128 + signal.SIGKILL


def test_lost_when_every_process_died_without_a_status(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    # What an OOM kill of the whole run, or a crash of the node's processes, leaves behind.
    kill_run(run_id)
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert run.state == "lost"
    assert run.reason


def test_a_recycled_pid_is_not_mistaken_for_the_run(ops: Ops) -> None:
    run_id = ops.new_run_id()
    started = ops.start(trainers.SLEEPER, run_id=run_id)
    kill_run(run_id)
    # Another process of the same user now holds a pid, and the pid file names it.
    stranger = subprocess.Popen(
        ["sleep", "60"],
        user=GPU_USER,
        group=GPU_USER,
        extra_groups=[],
        stdin=subprocess.DEVNULL,
    )
    try:
        pid_file = ops.far_run_dir(run_id) / ".rtrain" / "train.pid"
        pid_file.write_text(f"{stranger.pid}\n")
        assert started.pid != stranger.pid
        run = ops.status(run_id)
        assert run.state == "lost", run
        # And stopping the run never touches the stranger (the far side either finds nothing
        # of the run alive or refuses because the pid file names a foreign process).
        try:
            stopped = ops.request("run/stop", {"host": "plain", "runId": run_id, "grace": 1})
            assert stopped.outcome == "not_running"
        except RemoteError as error:
            assert error.kind == "stop_refused"
            assert str(stranger.pid) in error.message
        assert pid_alive(stranger.pid)
    finally:
        stranger.kill()
        stranger.wait()


def test_status_of_an_unknown_run_is_run_not_found(ops: Ops) -> None:
    error = ops.error(
        "run/status", {"host": "plain", "runId": "never-started", "workdir": ops.workdir}
    )
    assert error.kind == "run_not_found"


def test_status_finds_a_run_this_daemon_never_saw(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.EXIT_3, run_id=run_id)
    ops.wait_state(run_id, lambda run: run.state != "running")
    # A second daemon with an empty registry (another laptop) asks the host by workdir.
    ops.kill_daemon()
    for path in (ops.daemon.state / "rtrain").glob("registry.sqlite3*"):
        path.unlink()
    run = ops.request("run/status", {"host": "plain", "runId": run_id, "workdir": ops.workdir}).run
    assert (run.state, run.exit_code) == ("failed", 3)
    # The run is now known: later operations find it without the workdir.
    result, chunks = ops.tail(run_id)
    assert chunks.data == b"about to fail\n"
    assert result.run.state == "failed"


def test_unknown_while_the_host_cannot_be_reached(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    ops.hosts.stop_plain(drop_sessions=True)
    try:
        run = ops.status(run_id)
        assert run.state == "unknown"
        assert "unreachable" in run.reason
    finally:
        ops.hosts.start_plain()
    assert ops.status(run_id).state == "running"
