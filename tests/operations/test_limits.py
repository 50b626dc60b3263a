"""A run's limits, kept by the host itself: a maximum duration stops the run as `run/stop`
would (also with the daemon killed meanwhile, and again after a restart); a run whose log is
still and whose GPUs are idle is flagged stalled, and with `onStall: stop` stopped."""

from __future__ import annotations

import time
from typing import Any

from tests.hosts import GPU_USER
from tests.hosts.fake_nvidia_smi import NO_APPS_FILE
from tests.operations import trainers
from tests.operations.harness import WAIT_S, Ops
from tests.operations.processes import run_pids

# Sleeps with its log still; prints once first so its log exists.
STILL = trainers.SLEEPER

# Writes a line every 0.1 s once the file `go` appears in its run dir; still before that.
WAKES_ON_GO = """
import os, time
print("waiting", flush=True)
while not os.path.exists("go"):
    time.sleep(0.1)
step = 0
while True:
    print("step", step, flush=True)
    step += 1
    time.sleep(0.1)
"""


def gone(ops: Ops, run_id: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while run_pids(run_id):
        assert time.monotonic() < deadline, f"processes of {run_id} are still alive"
        time.sleep(0.05)


def test_a_run_past_its_max_duration_is_stopped_and_says_why(ops: Ops) -> None:
    run_id = ops.new_run_id()
    started = ops.start(STILL, run_id=run_id, maxDuration=2, stallAfter=0)
    assert started.run.max_duration == 2
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert (run.state, run.stopped_by, run.reason) == ("stopped", "max_duration", "max duration 2s")
    assert (ops.far_run_dir(run_id) / ".rtrain" / "limit_stop").read_text() == "max_duration 2\n"
    gone(ops, run_id)
    listed = {r.run_id: r for r in ops.request("runs/list", {}).runs}
    assert listed[run_id].stopped_by == "max_duration"


def test_the_max_duration_holds_with_the_daemon_killed(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(STILL, run_id=run_id, maxDuration=3, stallAfter=0)
    ops.kill_daemon()
    # With no daemon at all, the host stops the run itself.
    ops.wait_file(ops.far_run_dir(run_id) / ".rtrain" / "stop_requested")
    gone(ops, run_id)
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert (run.state, run.reason) == ("stopped", "max duration 3s")


def test_a_restart_keeps_the_max_duration(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(STILL, run_id=run_id, maxDuration=2, stallAfter=0)
    ops.wait_state(run_id, lambda run: run.state == "stopped")
    again = ops.request("run/restart", {"host": "plain", "runId": run_id}).run
    assert (again.state, again.max_duration, len(again.attempts)) == ("running", 2, 2)
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert (run.state, run.stopped_by) == ("stopped", "max_duration")
    assert [a.state for a in run.attempts] == ["stopped", "stopped"]


def test_a_still_trainer_is_flagged_stalled_and_unflagged_once_it_moves(ops: Ops) -> None:
    ops.client()  # the test's requests go through the first client, not the watcher
    watcher = ops.client()
    watcher.request("runs/list", {"subscribe": True})
    run_id = ops.new_run_id()
    ops.start(WAKES_ON_GO, run_id=run_id, stallAfter=2)
    stalled = ops.wait_state(run_id, lambda run: run.stalled_since is not None)
    assert stalled.state == "running"
    assert stalled.stalled_since <= time.time()
    (ops.far_run_dir(run_id) / "go").write_text("")
    moving = ops.wait_state(run_id, lambda run: run.stalled_since is None)
    assert moving.state == "running"

    pushed: list[Any] = []
    watcher.request(
        "daemon/info",
        on_notification=lambda method, params: (
            pushed.append(params.run) if method == "run/changed" else None
        ),
    )
    flags = [run.stalled_since is not None for run in pushed if run.run_id == run_id]
    assert flags[-2:] == [True, False], flags


def test_a_stalled_run_with_on_stall_stop_is_stopped_and_says_why(ops: Ops) -> None:
    run_id = ops.new_run_id()
    ops.start(STILL, run_id=run_id, stallAfter=2, onStall="stop")
    run = ops.wait_state(run_id, lambda run: run.state != "running")
    assert (run.state, run.stopped_by, run.reason) == ("stopped", "stall", "stalled for 2s")
    gone(ops, run_id)


def test_a_still_log_with_a_busy_gpu_is_not_stalled(ops: Ops) -> None:
    busy, idle = ops.new_run_id("busy"), ops.new_run_id("idle")
    # Both hold a GPU; only one computes on it.
    ops.start(STILL, run_id=busy, stallAfter=2, env={"RTRAIN_FAKE_GPU_LOAD": "1:80:1000"})
    ops.start(STILL, run_id=idle, stallAfter=2, env={"RTRAIN_FAKE_GPU_LOAD": "0:2:1000"})
    # Well past the period for the idle one, and so for the busy one, started before it.
    ops.wait_state(
        idle, lambda run: run.stalled_since is not None and time.time() - run.stalled_since > 5
    )
    assert ops.status(busy).stalled_since is None


# Computes (for the fake nvidia-smi) at UTIL % on the GPU its claim gave it, silently.
LOADS_ITS_GPU = """
import os
gpu = os.environ["CUDA_VISIBLE_DEVICES"]
env = dict(os.environ, RTRAIN_FAKE_GPU_LOAD=gpu + ":UTIL:1000")
print("loading GPU " + gpu, flush=True)
os.execve("/bin/sleep", ["sleep", "300"], env)
"""


def test_a_busy_gpu_counts_where_nvidia_smi_lists_no_processes(ops: Ops) -> None:
    """Inside containers nvidia-smi often lists no compute process: the GPUs the run was given
    (its claim) stand for the ones it computes on. The fault: a silent run at 100% was
    flagged stalled (and with --on-stall stop, or a guard's stalled_idle, stopped)."""
    no_apps = ops.hosts.home(GPU_USER) / NO_APPS_FILE
    no_apps.write_text("")
    try:
        busy, idle = ops.new_run_id("busy"), ops.new_run_id("idle")
        for run_id, util in ((busy, "100"), (idle, "1")):
            ops.start(LOADS_ITS_GPU.replace("UTIL", util), run_id=run_id, gpus=1, stallAfter=2)
            ops.wait_file(ops.far_run_dir(run_id) / "train.log", lambda text: "loading" in text)
        # Well past the period for the idle one, and so for the busy one, started before it.
        ops.wait_state(
            idle, lambda run: run.stalled_since is not None and time.time() - run.stalled_since > 5
        )
        assert ops.status(busy).stalled_since is None
    finally:
        no_apps.unlink(missing_ok=True)


def test_time_queued_for_gpus_counts_neither_to_the_limit_nor_to_the_cost(ops: Ops) -> None:
    holder, waiter = ops.new_run_id("holder"), ops.new_run_id("waiter")
    ops.start(STILL, run_id=holder, gpus=2, stallAfter=0)
    # Its trainer runs once it has claimed both GPUs.
    ops.wait_file(ops.far_run_dir(holder) / "train.log", lambda text: "sleeping" in text)
    queued = ops.start(STILL, run_id=waiter, gpus=1, wait=True, maxDuration=2, stallAfter=0)
    assert queued.run.state == "queued"
    # Queued for longer than its limit, and still queued, not stopped.
    deadline = time.monotonic() + WAIT_S
    while time.time() - queued.run.started_at < 4:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert ops.status(waiter).state == "queued"
    freed_at = time.time()
    ops.request("run/stop", {"host": "plain", "runId": holder, "grace": 5})

    run = ops.wait_state(waiter, lambda run: run.state not in ("queued", "running"))
    assert (run.state, run.stopped_by) == ("stopped", "max_duration")
    (attempt,) = run.attempts
    assert attempt.running_at >= freed_at > attempt.started_at
    listed = {r.run_id: r for r in ops.request("runs/list", {}).runs}
    assert listed[waiter].billed_seconds == round(attempt.ended_at - attempt.running_at, 3)
