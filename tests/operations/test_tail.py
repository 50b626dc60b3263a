"""run/tail end to end: every byte of the log exactly once, across breaks of every kind."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import DaemonProtocolError
from tests.operations import trainers
from tests.operations.harness import LogCollector, Ops, RequestInThread, master_pids


def assert_contiguous(chunks: list[Any], start: int = 0) -> None:
    """Each chunk begins where the previous one ended (or at 0 after a rotation)."""
    expected = start
    for chunk in chunks:
        if chunk.rotated:
            assert chunk.offset == 0
        else:
            assert chunk.offset == expected, (chunk.offset, expected)
        assert chunk.next_offset - chunk.offset == len(chunk.text.encode())
        expected = chunk.next_offset


def test_tail_streams_steps_and_ends_with_the_final_state(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    result, chunks = ops.tail(run_id)
    log = (ops.far_run_dir(run_id) / "train.log").read_bytes()
    assert result.run.state == "completed"
    assert result.run.exit_code == 0
    assert result.offset == len(log)
    assert chunks.data == log
    assert b"step 4" in log and log.endswith(b"done\n")
    assert_contiguous(chunks.chunks)


def test_tail_of_a_failing_run_ends_failed_with_its_exit_code(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.EXIT_3, run_id=run_id)
    result, chunks = ops.tail(run_id)
    assert result.run.state == "failed"
    assert result.run.exit_code == 3
    assert chunks.data == b"about to fail\n"


def test_reattach_from_any_offset(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.STEPS, run_id=run_id)
    ops.tail(run_id)
    log = (ops.far_run_dir(run_id) / "train.log").read_bytes()
    for offset in (0, 1, 7, len(log) // 2, len(log) - 1, len(log)):
        result, chunks = ops.tail(run_id, offset=offset)
        assert chunks.data == log[offset:]
        assert result.offset == len(log)
        assert_contiguous(chunks.chunks, offset)
    # Without follow, a tail returns what there is and stops.
    result, chunks = ops.tail(run_id, offset=3, follow=False)
    assert chunks.data == log[3:]


def test_a_fast_20mb_log_arrives_exactly_once(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.FLOOD, run_id=run_id)
    result, chunks = ops.tail(run_id)
    log = (ops.far_run_dir(run_id) / "train.log").read_bytes()
    assert len(log) == 220000 * 100
    assert result.run.state == "completed"
    assert result.offset == len(log)
    assert_contiguous(chunks.chunks)
    assert chunks.data == log


def test_tail_follows_a_rotated_log(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.ROTATING, run_id=run_id)
    run_dir = ops.far_run_dir(run_id)
    tail = RequestInThread(
        ops.client(), "run/tail", {"host": "plain", "runId": run_id, "offset": 0}
    )
    tail.wait_for(lambda: b"before rotation 2\n" in tail.chunks.data)
    (run_dir / "rotate").touch()
    result = tail.join()
    assert tail.error is None, tail.error
    old = (run_dir / "train.log.1").read_bytes()
    new = (run_dir / "train.log").read_bytes()
    assert old == b"before rotation 1\nbefore rotation 2\n"
    assert new == b"after rotation\n"
    assert tail.chunks.data == old + new
    assert [c.rotated for c in tail.chunks.chunks].count(True) == 1
    assert_contiguous(tail.chunks.chunks)
    assert result.run.state == "completed"


@pytest.mark.parametrize("how", ["kill_master", "restart_sshd"])
def test_no_line_lost_or_repeated_when_the_connection_drops(ops: Ops, how: str) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.TRICKLE, run_id=run_id)
    run_dir = ops.far_run_dir(run_id)
    tail = RequestInThread(
        ops.client(), "run/tail", {"host": "plain", "runId": run_id, "offset": 0}
    )
    tail.wait_for(lambda: len(tail.chunks.chunks) >= 3)
    [old_master] = master_pids(ops)
    if how == "kill_master":
        os.kill(old_master, signal.SIGKILL)
    else:
        ops.hosts.stop_plain(drop_sessions=True)
        ops.hosts.start_plain()
    before = len(tail.chunks.chunks)
    # The tail recovers on a new master by itself and goes on.
    tail.wait_for(lambda: len(tail.chunks.chunks) >= before + 3)
    assert master_pids(ops) and old_master not in master_pids(ops)
    (run_dir / "finish").touch()
    result = tail.join()
    assert tail.error is None, tail.error
    log = (run_dir / "train.log").read_bytes()
    assert log.endswith(b"the end\n")
    assert_contiguous(tail.chunks.chunks)
    assert tail.chunks.data == log
    assert result.run.state == "completed"


def test_reattach_after_the_daemon_is_killed(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.TRICKLE, run_id=run_id)
    run_dir = ops.far_run_dir(run_id)
    tail = RequestInThread(
        ops.client(), "run/tail", {"host": "plain", "runId": run_id, "offset": 0}
    )
    tail.wait_for(lambda: len(tail.chunks.chunks) >= 3)
    daemon = ops.kill_daemon()
    tail.join()
    assert isinstance(tail.error, DaemonProtocolError)
    seen = tail.chunks.chunks
    resume_at = seen[-1].next_offset

    # A new client starts a new daemon; the tail picks up where the last chunk ended.
    with DaemonClient.connect(name="rtrain-tests", timeout=120) as client:
        assert ops.daemon.daemon_pids() != [daemon]
        (run_dir / "finish").touch()
        rest = LogCollector()
        result = client.request(
            "run/tail", {"host": "plain", "runId": run_id, "offset": resume_at}, rest
        )
    log = (run_dir / "train.log").read_bytes()
    assert_contiguous(seen + rest.chunks)
    assert tail.chunks.data + rest.data == log
    assert result.run.state == "completed"


def test_a_partial_line_arrives_while_the_run_holds_it(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.HELD_BAR, run_id=run_id)
    tail = RequestInThread(
        ops.client(), "run/tail", {"host": "plain", "runId": run_id, "offset": 0}
    )
    # The trainer writes no newline until the test lets it go on.
    tail.wait_for(lambda: tail.chunks.data.endswith(b"\r 3/10"))
    (ops.far_run_dir(run_id) / "finish").touch()
    result = tail.join()
    assert tail.error is None, tail.error
    assert result.run.state == "completed"
    log = (ops.far_run_dir(run_id) / "train.log").read_bytes()
    assert tail.chunks.data == log == b"\r 1/10\r 2/10\r 3/10\r10/10\n"
    assert_contiguous(tail.chunks.chunks)
