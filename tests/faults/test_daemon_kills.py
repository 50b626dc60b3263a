"""The daemon killed with SIGKILL at random points of each operation, then started again by
the next client call: the registry is intact and every run is found again with its true state
(as the far host's own files and processes tell it), and what a client was streaming or
fetching can be completed without a byte lost."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from rtrain.client.errors import DaemonProtocolError
from tests.faults.conftest import PROXY_ALIAS, Campaign
from tests.operations import trainers
from tests.operations.harness import RequestInThread
from tests.operations.processes import parent_of, process_gone, run_pids

WAIT_S = 30.0
MIB = 1024 * 1024
# Kill points per operation; each is drawn at random (seeded, so a failure can be replayed).
KILLS = 3

SLOW_TO_STOP = trainers.slow_to_stop(0.8)

BIG_OUTPUT = trainers.big_output(32)
# One way, each way: a status through the proxy takes at least twice this.
STATUS_LINK_DELAY_S = 0.4


def kill_daemon_now(campaign: Campaign, during: str) -> None:
    """SIGKILL the daemon with its clients still connected (no goodbye of any kind)."""
    candidates = campaign.daemon.daemon_pids()
    # A child the daemon just forked (an ssh not yet exec'd) still looks like the daemon.
    parents = {pid: parent_or_none(pid) for pid in candidates}
    [daemon] = [pid for pid, parent in parents.items() if parent not in (None, *candidates)]
    os.kill(daemon, signal.SIGKILL)
    campaign.ledger.fault(f"daemon SIGKILL during {during}")
    deadline = time.monotonic() + WAIT_S
    while not process_gone(daemon):
        assert time.monotonic() < deadline, "the daemon survived kill -9"
        time.sleep(0.01)


def parent_or_none(pid: int) -> int | None:
    try:
        return parent_of(pid)
    except (OSError, IndexError):
        return None


def kill_points(op: str, span: float) -> list[float]:
    chooser = random.Random(f"daemon-kill-{op}")
    return [chooser.uniform(0.0, span) for _ in range(KILLS)]


def registry_path(campaign: Campaign) -> Path:
    return campaign.daemon.state / "rtrain" / "registry.sqlite3"


def assert_registry_intact(campaign: Campaign) -> None:
    db = sqlite3.connect(registry_path(campaign))
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()


def far_truth(campaign: Campaign, run_id: str) -> str | None:
    """The run's state as the host's files and processes say; None: no such run there."""
    run_dir = campaign.far_run_dir(run_id)
    if not run_dir.is_dir():
        return None
    if run_pids(run_id):
        return "running"
    if (run_dir / ".rtrain" / "stop_requested").exists():
        return "stopped"
    status = run_dir / ".rtrain" / "status"
    if status.exists():
        return "completed" if status.read_text().strip() == "0" else "failed"
    return "lost"


def assert_found_with_true_states(campaign: Campaign, run_ids: list[str]) -> None:
    """After the restart: every run the host has is listed, each settling on its true state."""
    assert_registry_intact(campaign)
    deadline = time.monotonic() + WAIT_S
    while True:
        listed = {run.run_id: run for run in campaign.request("runs/list", {}).runs}
        wrong = {}
        for run_id in run_ids:
            truth = far_truth(campaign, run_id)
            run = listed.get(run_id)
            if truth is None or (truth == "lost" and run is None):
                # Never made, or a start that never launched and was forgotten: nothing runs.
                assert run_pids(run_id) == []
                continue
            if run is None or run.state != truth:
                wrong[run_id] = (run.state if run else "missing", truth)
        if not wrong:
            break
        assert time.monotonic() < deadline, f"registry vs host: {wrong}"
        time.sleep(0.2)
    for run_id in run_ids:
        campaign.ledger.verify("run state checked against the host after a daemon kill", True)
        if far_truth(campaign, run_id) == "running":
            told = campaign.status(run_id, host=listed[run_id].host).state
            # A stop that was under way when the daemon died goes on on the host, so the
            # truth may move on between the two looks; the answer must match one of them.
            assert told in ("running", far_truth(campaign, run_id))


def restart(campaign: Campaign) -> None:
    """The next client call starts a new daemon."""
    for client in campaign.clients:
        client.close()
    campaign.clients.clear()
    campaign.request("daemon/info")


def test_kill_during_start(campaign: Campaign) -> None:
    dataset = campaign.tmp / "data.bin"
    dataset.write_bytes(os.urandom(8 * MIB))
    calibrate = campaign.new_run_id()
    began = time.monotonic()
    campaign.start(trainers.SLEEPER, run_id=calibrate, dataset=str(dataset))
    span = (time.monotonic() - began) * 1.2
    run_ids = [calibrate]
    # Random points, and the two moments that matter most: the launch claimed, the trainer up.
    moments: list[float | str] = [*kill_points("start", span), "meta.json", ".rtrain/train.pid"]
    for moment in moments:
        run_id = campaign.new_run_id()
        run_ids.append(run_id)
        params = {
            "host": "plain",
            "runId": run_id,
            "workdir": campaign.workdir,
            "gpus": 0,
            "config": str(campaign.file("config.yaml", "epochs: 1\n")),
            "dataset": str(dataset),
            "command": ["{python}", "-c", trainers.SLEEPER],
        }
        start = RequestInThread(campaign.client(), "run/start", params)
        if isinstance(moment, str):
            seen = campaign.far_run_dir(run_id) / moment
            campaign.wait_file(seen, lambda _text: True)
        else:
            time.sleep(moment)
        kill_daemon_now(campaign, "start")
        start.join()
        restart(campaign)
        if start.result is not None:
            # It answered before dying: that answer holds.
            assert far_truth(campaign, run_id) == "running"
        # A trainer on the host is never one the registry does not know.
        assert_found_with_true_states(campaign, run_ids)
        for candidate in run_ids:
            if run_pids(candidate):
                assert candidate in {r.run_id for r in campaign.request("runs/list", {}).runs}


def test_kill_during_tail_then_the_log_completes_from_its_offset(campaign: Campaign) -> None:
    run_ids = []
    for delay in kill_points("tail", 1.0):
        run_id = campaign.new_run_id()
        run_ids.append(run_id)
        campaign.start(trainers.TRICKLE, run_id=run_id)
        tail = RequestInThread(
            campaign.client(), "run/tail", {"host": "plain", "runId": run_id, "offset": 0}
        )
        time.sleep(delay)
        kill_daemon_now(campaign, "tail")
        tail.join()
        restart(campaign)
        got = tail.chunks.chunks
        offset = got[-1].next_offset if got else 0
        (campaign.far_run_dir(run_id) / "finish").touch()
        rest, more = campaign.tail(run_id, offset=offset)
        whole = tail.chunks.data + more.data
        assert rest.run.state == "completed"
        assert campaign.ledger.verify(
            "log bytes across a daemon kill", whole == campaign.far_log(run_id)
        )
    assert_found_with_true_states(campaign, run_ids)


def test_kill_during_fetch_then_a_retry_completes(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    campaign.start(BIG_OUTPUT, run_id=run_id)
    campaign.wait_state(run_id, lambda run: run.state == "completed")
    far = campaign.far_run_dir(run_id) / "big.bin"
    want = hashlib.sha256(far.read_bytes()).hexdigest()
    for i, delay in enumerate(kill_points("fetch", 0.6)):
        dest = campaign.tmp / f"home-{i}"
        params = {"host": "plain", "runId": run_id, "path": "big.bin", "dest": str(dest)}
        fetch = RequestInThread(campaign.client(), "run/fetch", params)
        time.sleep(delay)
        kill_daemon_now(campaign, "fetch")
        fetch.join()
        final = dest / "big.bin"
        if fetch.result is None and final.exists():
            # Whatever lies under the final name is whole: it is only ever renamed into place.
            assert hashlib.sha256(final.read_bytes()).hexdigest() == want
        # A daemon killed mid-copy leaves at most its hidden partial copy, never a visible part.
        if dest.exists():
            for left in dest.iterdir():
                assert left.name in ("big.bin", ".rtrain-partial"), left
        restart(campaign)
        [got] = campaign.request("run/fetch", params).files
        digest = hashlib.sha256(Path(got.local_path).read_bytes()).hexdigest()
        assert campaign.ledger.verify("fetched file after a daemon kill", digest == want)
        partial = dest / ".rtrain-partial"
        assert not partial.exists(), sorted(p.name for p in partial.iterdir())
    assert_found_with_true_states(campaign, [run_id])


def test_kill_during_stop(campaign: Campaign) -> None:
    run_ids = []
    for delay in kill_points("stop", 1.2):
        run_id = campaign.new_run_id()
        run_ids.append(run_id)
        campaign.start(SLOW_TO_STOP, run_id=run_id)
        campaign.wait_file(campaign.far_run_dir(run_id) / "train.log", lambda t: "ready" in t)
        stop = RequestInThread(
            campaign.client(), "run/stop", {"host": "plain", "runId": run_id, "grace": 10}
        )
        time.sleep(delay)
        kill_daemon_now(campaign, "stop")
        stop.join()
        if stop.result is not None:
            assert stop.result.outcome == "stopped"
            assert run_pids(run_id) == []
        restart(campaign)
        assert_found_with_true_states(campaign, run_ids)


@pytest.mark.parametrize("trainer", ["SLEEPER", "EXIT_3"])
def test_kill_during_status(campaign: Campaign, trainer: str) -> None:
    run_ids = []
    for delay in kill_points(f"status-{trainer}", 0.15):
        run_id = campaign.new_run_id()
        run_ids.append(run_id)
        campaign.start(getattr(trainers, trainer), run_id=run_id, host=PROXY_ALIAS)
        # A slow link holds the answer back for longer than the kill can wait, and an
        # explicit workdir makes the daemon ask the host even of a run it saw end: so the
        # kill lands while the status is in flight, never after its answer.
        campaign.link.delay_s = STATUS_LINK_DELAY_S
        ask = {"host": PROXY_ALIAS, "runId": run_id, "workdir": campaign.workdir}
        status = RequestInThread(campaign.client(), "run/status", ask)
        time.sleep(delay)
        kill_daemon_now(campaign, "status")
        status.join()
        campaign.link.delay_s = 0.0
        assert status.result is None, "answered before the kill: not a kill during status"
        assert isinstance(status.error, DaemonProtocolError), status.error
        restart(campaign)
    assert_found_with_true_states(campaign, run_ids)


def test_kill_during_preflight(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    campaign.start(trainers.SLEEPER, run_id=run_id)
    for delay in kill_points("preflight", 0.4):
        check = RequestInThread(
            campaign.client(),
            "host/preflight",
            {"host": "plain", "gpus": 2, "workdir": campaign.workdir},
        )
        time.sleep(delay)
        kill_daemon_now(campaign, "preflight")
        check.join()
        restart(campaign)
        assert campaign.request("host/preflight", {"host": "plain", "gpus": 2}).ok
    assert_found_with_true_states(campaign, [run_id])
