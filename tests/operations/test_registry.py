"""The registry and the monitor: every run kept across daemon deaths, states kept fresh."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.operations import trainers
from tests.operations.harness import WAIT_S, Ops
from tests.waiting import wait_until


def listed(ops: Ops, **params: Any) -> dict[str, Any]:
    return {run.run_id: run for run in ops.request("runs/list", params).runs}


def test_runs_survive_kill_9_and_filter_by_host_and_state(ops: Ops) -> None:
    done, failed, running = ops.new_run_id(), ops.new_run_id(), ops.new_run_id()
    ops.start(trainers.STEPS, run_id=done)
    ops.start(trainers.EXIT_3, run_id=failed)
    ops.start(trainers.SLEEPER, run_id=running)
    local = ops.new_run_id("local")
    ops.start(trainers.STEPS, run_id=local, host="local")
    for run_id in (done, failed):
        ops.wait_state(run_id, lambda run: run.state != "running")
    ops.wait_state(local, lambda run: run.state == "completed", host="local")
    before = listed(ops)

    ops.kill_daemon()
    registry = ops.daemon.state / "rtrain" / "registry.sqlite3"
    with contextlib.closing(sqlite3.connect(registry)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    after = listed(ops)
    assert set(after) == set(before) == {done, failed, running, local}
    for run_id in after:
        assert after[run_id].state == before[run_id].state
        assert after[run_id].remote_dir == before[run_id].remote_dir
        assert after[run_id].command == before[run_id].command
    assert set(listed(ops, host="plain")) == {done, failed, running}
    assert set(listed(ops, host="local")) == {local}
    assert set(listed(ops, state="running")) == {running}
    assert set(listed(ops, host="plain", state="failed")) == {failed}
    assert listed(ops, host="nowhere") == {}
    # The new daemon also goes on watching the run it inherited.
    assert ops.status(running).state == "running"


def test_the_monitor_pushes_run_changed_to_subscribers(ops: Ops) -> None:
    watcher = ops.client()
    watcher.request("runs/list", {"subscribe": True})
    actor = ops.client()
    run_id = ops.new_run_id()
    actor.request(
        "run/start",
        {
            "host": "plain",
            "runId": run_id,
            "workdir": ops.workdir,
            "gpus": 0,
            "config": str(ops.file("config.yaml", "a: 1\n")),
            "command": ["{python}", "-c", trainers.EXIT_3],
        },
    )
    # Nobody asks for this run's status: the daemon finds out by itself.
    deadline = time.monotonic() + WAIT_S
    while True:
        [run] = actor.request("runs/list", {"host": "plain"}).runs
        if run.state != "running":
            break
        assert time.monotonic() < deadline, "the monitor never refreshed the run"
        time.sleep(0.1)
    assert (run.state, run.exit_code) == ("failed", 3)

    pushed: list[Any] = []
    watcher.request(
        "daemon/info",
        on_notification=lambda method, params: (
            pushed.append(params.run) if method == "run/changed" else None
        ),
    )
    states = [run.state for run in pushed if run.run_id == run_id]
    assert states == ["running", "failed"]
    assert pushed[-1].exit_code == 3


def far_commands(calls: Path) -> list[str]:
    """The far commands counted so far, one line each: the arguments after the script."""
    return calls.read_text().splitlines() if calls.exists() else []


def test_one_remote_command_per_host_per_poll(ops: Ops) -> None:
    # Every far-side script is `sh -c SCRIPT rtrain ARGS...`, on a channel of its own or in a
    # long-lived shell; an `sh` first on the far PATH writes down each one's arguments,
    # whichever way they come. It is there before the daemon's first command, so every shell
    # the daemon opens uses it. The far user is shared with every other daemon on this machine
    # (other test sessions included), so only commands naming this test's own workdir count.
    # Counted per command, not per second: a loaded machine slows the polls, not their shape.
    counter = ops.home / ".test-hosts" / "bin" / "sh"
    calls = ops.home / f".rtrain-test-sh-calls-{ops.tag}"
    counter.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = -c ] && [ "$3" = rtrain ] && case "$4" in *"/{ops.tag}") '
        f'(shift 3; echo "$*") >>"$HOME/{calls.name}";; esac\n'
        'exec /bin/sh "$@"\n'
    )
    counter.chmod(0o755)
    try:
        runs = [ops.new_run_id() for _ in range(6)]
        for run_id in runs:
            ops.start(trainers.SLEEPER, run_id=run_id)

        def names_all(line: str) -> bool:
            return all(run_id in line for run_id in runs)

        # Other commands on the workdir that name no run (the guard armed when a run starts
        # running) are no polls.
        def polls_from(first: int) -> list[str]:
            later = far_commands(calls)[first:]
            return [line for line in later if any(run_id in line for run_id in runs)]

        # The first poll that asks about all six, then three more polls after it.
        wait_until("a poll of all six runs", lambda: any(map(names_all, far_commands(calls))))
        first = next(i for i, line in enumerate(far_commands(calls)) if names_all(line))
        wait_until("three more polls", lambda: len(polls_from(first)) >= 4)
        polls = polls_from(first)
    finally:
        counter.unlink(missing_ok=True)
        calls.unlink(missing_ok=True)
    # The monitor sends one command for all six runs; one per run would name one run each.
    assert all(names_all(line) for line in polls), polls
    # ...and it keeps every one of them fresh.
    assert all(run.state == "running" for run in ops.request("runs/list", {}).runs)
