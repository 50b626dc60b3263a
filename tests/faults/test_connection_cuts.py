"""The connection cut during each operation (start, tail, fetch, stop, status), through a proxy
in front of the real sshd. After the daemon reconnects nothing is left ambiguous: a start
launched exactly one trainer or nothing and says which, a log arrives without a byte missing
or repeated, no truncated file lands under its final name, a stop's outcome is the truth."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.errors import RemoteError
from tests.faults.conftest import PROXY_ALIAS, Campaign
from tests.operations import trainers
from tests.operations.harness import RequestInThread
from tests.operations.processes import run_pids

WAIT_S = 30.0
MIB = 1024 * 1024

# Runs until stopped; on SIGTERM it says so in a file, takes a moment to clean up, then exits:
# a stop that is still waiting when the connection goes.
SLOW_TO_STOP = trainers.slow_to_stop(1.5, mark_term=True)

# Writes a file large enough that a cut lands in the middle of fetching it.
BIG_OUTPUT = trainers.big_output(48)


def wait_for(what: str, check: Any, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def wrappers_of(run_id: str) -> list[int]:
    """Session leaders (launch wrappers) of a run: exactly one per launch."""
    found = []
    for pid in run_pids(run_id):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"./rtrain-run" in argv:
            found.append(pid)
    return found


def start_params(campaign: Campaign, run_id: str, code: str, **extra: Any) -> dict[str, Any]:
    return {
        "host": PROXY_ALIAS,
        "runId": run_id,
        "workdir": campaign.workdir,
        "gpus": 0,
        "config": str(campaign.file("config.yaml", "epochs: 1\n")),
        "command": ["{python}", "-c", code],
        **extra,
    }


def test_a_cut_mid_upload_starts_nothing_and_says_so(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    dataset = campaign.tmp / "data.bin"
    dataset.write_bytes(os.urandom(32 * MIB))
    campaign.link.delay_s = 0.02  # a WAN: the upload takes long enough to be cut in
    cut_at: list[int] = []

    def on_progress(method: str, params: Any) -> None:
        if method != "$/progress" or params.value.kind != "report" or cut_at:
            return
        # Well into the file: ssh has opened its session and sent much of it. (A cut before
        # the session opens is no fault at all: ssh then connects afresh and ships it all.)
        total = params.value.total_bytes or 0
        if total / 4 < (params.value.done_bytes or 0) < total * 3 / 4:
            cut_at.append(params.value.done_bytes)
            campaign.cut("start, mid-upload")

    with pytest.raises(RemoteError) as caught:
        campaign.request(
            "run/start",
            start_params(
                campaign, run_id, trainers.SLEEPER, dataset=str(dataset), progressToken="up"
            ),
            on_notification=on_progress,
        )
    assert cut_at, "the upload finished before the cut"
    error = caught.value
    assert error.kind == "host_unreachable", error.message
    assert "nothing was started" in error.message
    # The host agrees: nothing runs, and no partial dataset lies under its final name.
    run_dir = campaign.far_run_dir(run_id)
    assert run_pids(run_id) == []
    assert not (run_dir / "data.bin").exists()
    assert not (run_dir / "meta.json").exists()
    wait_for("the partial upload to be removed", lambda: not (run_dir / "data.bin.part").exists())
    # The registry does not pretend either.
    listed = campaign.request("runs/list", {"host": PROXY_ALIAS}).runs
    assert [run.state for run in listed if run.run_id == run_id] in ([], ["lost"])

    # After reconnecting the same start (under a new id) works: exactly one trainer.
    again = campaign.new_run_id()
    campaign.link.delay_s = 0
    started = campaign.request(
        "run/start", start_params(campaign, again, trainers.SLEEPER, dataset=str(dataset))
    )
    assert started.run.state == "running"
    assert wrappers_of(again) == [started.pid]
    assert (campaign.far_run_dir(again) / "data.bin").read_bytes() == dataset.read_bytes()


# Where the start is when the link breaks, told by the file that just appeared on the host.
MOMENTS = {
    "config.yaml": "start, while shipping",
    "meta.json": "start, the launch under way",
    ".rtrain/train.pid": "start, the trainer just up",
}


@pytest.mark.parametrize("trigger", list(MOMENTS))
def test_a_cut_around_the_launch_leaves_exactly_one_trainer_or_none(
    campaign: Campaign, trigger: str
) -> None:
    run_id = campaign.new_run_id()
    seen = campaign.far_run_dir(run_id) / trigger
    broke = threading.Event()

    def break_link() -> None:
        # Freeze the link the moment the host shows the trigger, then reset it: whatever the
        # host does next, its answer cannot come back on this connection.
        wait_for(f"{trigger} on the host", seen.exists)
        campaign.link.stall()
        wait_for("the host's next bytes to be caught in the stall", lambda: campaign.link.held)
        campaign.cut(MOMENTS[trigger])
        campaign.link.resume()
        broke.set()

    breaker = threading.Thread(target=break_link, daemon=True)
    breaker.start()
    try:
        result = campaign.request("run/start", start_params(campaign, run_id, trainers.SLEEPER))
        error = None
    except RemoteError as raised:
        result, error = None, raised
    breaker.join(WAIT_S)
    assert broke.is_set()
    leaders = wrappers_of(run_id)
    if result is not None:
        # Told "started": exactly one trainer runs (the one named, when a pid came back).
        assert len(leaders) == 1
        assert result.pid in (None, leaders[0])
        assert result.run.state == "running"
        assert campaign.status(run_id, host=PROXY_ALIAS).state == "running"
    else:
        # Told "not started": nothing runs, and the error says so.
        assert error is not None
        assert leaders == [], error.message
        assert "nothing was started" in error.message


def test_a_tail_across_cuts_loses_and_repeats_no_byte(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    campaign.start(trainers.TRICKLE, run_id=run_id, host=PROXY_ALIAS)
    tail = RequestInThread(
        campaign.client(), "run/tail", {"host": PROXY_ALIAS, "runId": run_id, "offset": 0}
    )
    for _ in range(3):
        seen = len(tail.chunks.chunks)
        wait_for("more log", lambda seen=seen: len(tail.chunks.chunks) > seen)
        campaign.cut("tail")
    seen = len(tail.chunks.chunks)
    wait_for("the tail to resume", lambda: len(tail.chunks.chunks) > seen)
    (campaign.far_run_dir(run_id) / "finish").touch()
    tail.join()
    assert tail.error is None, tail.error
    assert tail.result.run.state == "completed"
    far = campaign.far_log(run_id)
    assert far.endswith(b"the end\n")
    chunks = tail.chunks.chunks
    contiguous = all(a.next_offset == b.offset for a, b in zip(chunks, chunks[1:], strict=False))
    assert campaign.ledger.verify("log bytes across cuts", tail.chunks.data == far and contiguous)
    assert tail.result.offset == len(far)


def test_a_cut_mid_fetch_leaves_no_truncated_file_and_a_retry_completes(
    campaign: Campaign,
) -> None:
    run_id = campaign.new_run_id()
    campaign.start(BIG_OUTPUT, run_id=run_id, host=PROXY_ALIAS)
    campaign.wait_state(run_id, lambda run: run.state == "completed", host=PROXY_ALIAS)
    far = campaign.far_run_dir(run_id) / "big.bin"
    dest = campaign.tmp / "home"
    params = {"host": PROXY_ALIAS, "runId": run_id, "path": "big.bin", "dest": str(dest)}
    campaign.link.delay_s = 0.01
    cut_at: list[int] = []

    def on_progress(method: str, params: Any) -> None:
        if method != "$/progress" or params.value.kind != "report" or cut_at:
            return
        if 0 < (params.value.done_bytes or 0) < (params.value.total_bytes or 0):
            cut_at.append(params.value.done_bytes)
            campaign.cut("fetch, mid-file")

    with pytest.raises(RemoteError) as caught:
        campaign.request("run/fetch", {**params, "progressToken": "f"}, on_notification=on_progress)
    assert cut_at
    assert caught.value.kind in ("host_unreachable", "transfer_failed"), caught.value.message
    # Nothing under the final name: at most the partial copy a retry resumes from.
    assert not dest.exists() or [p.name for p in dest.iterdir()] in ([], [".rtrain-partial"])

    campaign.link.delay_s = 0
    result = campaign.request("run/fetch", params)
    [got] = result.files
    local = Path(got.local_path)
    assert local == dest / "big.bin"
    digest = hashlib.sha256(local.read_bytes()).hexdigest()
    assert campaign.ledger.verify(
        "fetched file after a cut", digest == hashlib.sha256(far.read_bytes()).hexdigest()
    )
    assert sorted(p.name for p in dest.iterdir()) == ["big.bin"]


@pytest.mark.parametrize("route", ["comes back", "stays down"])
def test_a_cut_during_stop_still_tells_the_truth(campaign: Campaign, route: str) -> None:
    run_id = campaign.new_run_id()
    campaign.start(SLOW_TO_STOP, run_id=run_id, host=PROXY_ALIAS)
    run_dir = campaign.far_run_dir(run_id)
    campaign.wait_file(run_dir / "train.log", lambda text: "ready" in text)
    stop = RequestInThread(
        campaign.client(), "run/stop", {"host": PROXY_ALIAS, "runId": run_id, "grace": 10}
    )
    wait_for("the trainer to get SIGTERM", (run_dir / "term").exists)
    if route == "stays down":
        campaign.hosts.stop_plain()
    try:
        campaign.cut("stop")
        stop.join()
    finally:
        if route == "stays down":
            campaign.hosts.start_plain()
    if route == "comes back":
        # The stop asked again: told "stopped", and nothing of the run is left.
        assert stop.error is None, stop.error
        assert stop.result.outcome == "stopped", stop.result
        assert run_pids(run_id) == []
        assert stop.result.run.state == "stopped"
    else:
        # Not "stopped", not "failed to stop": not known yet, and how to learn it.
        assert isinstance(stop.error, RemoteError), stop.error
        assert stop.error.kind == "host_unreachable", stop.error.message
        assert "not known" in stop.error.message
    wait_for("the run to end", lambda: run_pids(run_id) == [])
    assert campaign.status(run_id, host=PROXY_ALIAS).state == "stopped"


@pytest.mark.parametrize("route", ["comes back", "stays down"])
def test_a_cut_during_status_says_unknown_or_the_truth(campaign: Campaign, route: str) -> None:
    run_id = campaign.new_run_id()
    campaign.start(trainers.SLEEPER, run_id=run_id, host=PROXY_ALIAS)
    campaign.link.stall()
    status = RequestInThread(
        campaign.client(), "run/status", {"host": PROXY_ALIAS, "runId": run_id}
    )
    wait_for("the status request to be caught in the stall", lambda: campaign.link.held)
    if route == "stays down":
        campaign.hosts.stop_plain()  # ssh's fresh connection is refused
    try:
        campaign.cut("status")
        campaign.link.resume()
        status.join()
    finally:
        if route == "stays down":
            campaign.hosts.start_plain()
    assert status.error is None, status.error
    run = status.result.run
    if route == "stays down":
        assert run.state == "unknown"
        assert run.reason and "unreachable" in run.reason
    else:
        # ssh itself reconnects when its master dies before the command got going.
        assert run.state in ("unknown", "running")
    # Reconnected: the truth again, and the run was never taken for ended.
    assert campaign.status(run_id, host=PROXY_ALIAS).state == "running"
    assert run_pids(run_id)


def test_a_launch_whose_answer_is_lost_while_the_host_stays_away_is_settled_later(
    campaign: Campaign,
) -> None:
    run_id = campaign.new_run_id()
    pid_file = campaign.far_run_dir(run_id) / ".rtrain" / "train.pid"

    def break_link() -> None:
        wait_for("train.pid on the host", pid_file.exists)
        campaign.link.stall()
        campaign.hosts.stop_plain()  # and the host stays unreachable for a while
        campaign.cut("start, the trainer just up, host then away")
        campaign.link.resume()

    breaker = threading.Thread(target=break_link, daemon=True)
    breaker.start()
    try:
        with pytest.raises(RemoteError) as caught:
            campaign.request("run/start", start_params(campaign, run_id, trainers.SLEEPER))
        breaker.join(WAIT_S)
        error = caught.value
        # Not "failed", not "nothing started": not known yet, and the user is told how to learn.
        assert error.kind == "host_unreachable", error.message
        assert "not known yet" in error.message
        assert f"rtrain status {PROXY_ALIAS} {run_id}" in error.message
        [listed] = campaign.request("runs/list", {"host": PROXY_ALIAS}).runs
        assert (listed.run_id, listed.state) == (run_id, "unknown")
    finally:
        campaign.hosts.start_plain()
    # Once the host answers, the monitor settles it by itself: the trainer that did start.
    deadline = time.monotonic() + WAIT_S
    while True:
        [listed] = campaign.request("runs/list", {"host": PROXY_ALIAS}).runs
        if listed.state != "unknown":
            break
        assert time.monotonic() < deadline, listed
        time.sleep(0.2)
    assert listed.state == "running"
    assert len(wrappers_of(run_id)) == 1
