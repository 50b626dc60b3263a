"""run/stop end to end: every process of the run goes, and `stopped` is said only then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.operations import trainers
from tests.operations.harness import Ops
from tests.operations.processes import pid_alive, run_pids


def stop(ops: Ops, run_id: str, **params: object) -> Any:
    return ops.request("run/stop", {"host": "plain", "runId": run_id, **params})


def child_pid(ops: Ops, run_id: str) -> int:
    return int(ops.wait_file(ops.far_run_dir(run_id) / "child.pid"))


def test_stop_a_running_run(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    before = run_pids(run_id)
    assert before
    result = stop(ops, run_id, grace=5)
    assert result.outcome == "stopped"
    assert set(before) <= set(result.killed)
    assert run_pids(run_id) == []
    assert result.run.state == "stopped"
    assert ops.status(run_id).state == "stopped"
    # Stopping again finds nothing to stop.
    assert stop(ops, run_id).outcome == "not_running"


def test_stop_a_finished_run_is_not_running(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.EXIT_3, run_id=run_id)
    ops.wait_state(run_id, lambda run: run.state != "running")
    result = stop(ops, run_id)
    assert result.outcome == "not_running"
    assert (result.run.state, result.run.exit_code) == ("failed", 3)


def test_a_child_ignoring_sigterm_is_named_then_killed_with_force(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STUBBORN_CHILD, run_id=run_id)
    stubborn = child_pid(ops, run_id)
    error = ops.error("run/stop", {"host": "plain", "runId": run_id, "grace": 0.5})
    assert error.kind == "stop_refused"
    assert str(stubborn) in error.message
    assert stubborn in error.data["survivors"]
    # Never "stopped" while a process of the run lives: it is still there.
    assert pid_alive(stubborn)

    result = stop(ops, run_id, grace=0.5, force=True)
    assert result.outcome == "stopped"
    assert stubborn in result.killed
    assert not pid_alive(stubborn)
    assert run_pids(run_id) == []
    assert result.run.state == "stopped"


def test_status_is_not_stopped_while_a_survivor_lives(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STUBBORN_CHILD, run_id=run_id)
    stubborn = child_pid(ops, run_id)
    assert ops.error("run/stop", {"host": "plain", "runId": run_id, "grace": 0.5}).kind == (
        "stop_refused"
    )
    assert pid_alive(stubborn)
    assert ops.status(run_id).state == "running"


def test_a_child_that_left_the_session_is_stopped_too(ops: Ops) -> None:
    run_id = ops.new_run_id()
    started = ops.start(trainers.ESCAPING_CHILD, run_id=run_id)
    escaped = child_pid(ops, run_id)
    # It really left: its own session, not the run's.
    stat = Path(f"/proc/{escaped}/stat").read_text().rsplit(") ", 1)[1].split()
    assert int(stat[3]) == escaped != started.pid
    result = stop(ops, run_id, grace=5)
    assert result.outcome == "stopped"
    assert escaped in result.killed
    assert not pid_alive(escaped)
    assert run_pids(run_id) == []


def test_stop_of_an_unknown_run(ops: Ops) -> None:
    error = ops.error(
        "run/stop", {"host": "plain", "runId": "never-started", "workdir": ops.workdir}
    )
    assert error.kind == "run_not_found"
