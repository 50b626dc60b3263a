"""A run whose directory vanished from the host: the monitor says `lost` once a second look
finds it gone too (protocol/run_states.py), and the run's attempt says so as well."""

from __future__ import annotations

import shutil
import time

from tests.operations import trainers
from tests.operations.harness import WAIT_S, Ops


def test_the_monitor_calls_a_run_whose_directory_vanished_lost(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(trainers.SLEEPER, run_id=run_id)
    assert ops.status(run_id).state == "running"
    shutil.rmtree(ops.far_run_dir(run_id))
    # Nobody asks about the run: the monitor finds out by itself.
    deadline = time.monotonic() + WAIT_S
    while True:
        [run] = ops.request("runs/list", {"host": "plain"}).runs
        if run.state != "running":
            break
        assert time.monotonic() < deadline, "the monitor never noticed"
        time.sleep(0.1)
    assert (run.state, run.reason) == ("lost", "the run directory is gone")
    assert [attempt.state for attempt in run.attempts] == ["lost"]
