"""The far side fails under live runs: sshd restarted under a live master, a stalled (not
closed) connection, every process of the host killed at once (a reboot). Runs go `unknown`
while the host cannot be asked and come back with their true state; a run whose processes
are gone becomes `lost`, never `running` forever."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

from rtrain.client.errors import RemoteError
from tests.faults.conftest import PROXY_ALIAS, Campaign, stranger_process
from tests.operations import trainers
from tests.operations.harness import LogCollector
from tests.operations.processes import pid_alive, run_pids

WAIT_S = 40.0
# ssh's keepalive (ServerAliveInterval 5 x ServerAliveCountMax 3) gives a silent link up
# after about 15 s; this is that plus margin for a loaded machine.
KEEPALIVE_S = 15 + 15


def listed(campaign: Campaign, run_id: str) -> Any:
    [run] = [r for r in campaign.request("runs/list", {}).runs if r.run_id == run_id]
    return run


def wait_listed(campaign: Campaign, run_id: str, state: str, timeout: float = WAIT_S) -> Any:
    """Wait until the registry (kept fresh by the monitor, nobody asking) says `state`."""
    deadline = time.monotonic() + timeout
    while True:
        run = listed(campaign, run_id)
        if run.state == state:
            return run
        assert time.monotonic() < deadline, f"{run_id} never became {state}: {run}"
        time.sleep(0.2)


def test_sshd_restarted_under_a_live_master(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    campaign.start(trainers.SLEEPER, run_id=run_id, host=PROXY_ALIAS)

    # A restart that keeps open sessions (what `systemctl restart ssh` does): the master
    # lives on, and every operation goes on through it, even a new start.
    campaign.hosts.stop_plain()
    campaign.ledger.fault("sshd stopped, sessions kept")
    try:
        assert campaign.status(run_id, host=PROXY_ALIAS).state == "running"
        other = campaign.new_run_id()
        campaign.start(trainers.STEPS, run_id=other, host=PROXY_ALIAS)
    finally:
        campaign.hosts.start_plain()
    assert campaign.status(run_id, host=PROXY_ALIAS).state == "running"
    _, chunks = campaign.tail(other, host=PROXY_ALIAS)
    assert chunks.data == campaign.far_log(other)

    # A restart that drops every session (ours too: it began under the earlier sshd), with
    # the host away for a moment: unknown, then running again, never ended.
    campaign.hosts.stop_plain(drop_sessions=True)
    campaign.cut("sshd restart that drops sessions")
    try:
        run = campaign.status(run_id, host=PROXY_ALIAS)
        assert run.state == "unknown"
        assert "unreachable" in (run.reason or "")
        assert wait_listed(campaign, run_id, "unknown").reason
    finally:
        campaign.hosts.start_plain()
    assert campaign.status(run_id, host=PROXY_ALIAS).state == "running"
    assert wait_listed(campaign, run_id, "running")


def test_a_stalled_connection_turns_runs_unknown_and_a_tail_resumes_exactly(
    campaign: Campaign,
) -> None:
    run_id = campaign.new_run_id()
    campaign.start(trainers.TRICKLE, run_id=run_id, host=PROXY_ALIAS)
    tail_client = campaign.client()
    chunks = LogCollector()
    tailed: dict[str, Any] = {}

    def tail() -> None:
        try:
            tailed["result"] = tail_client.request(
                "run/tail", {"host": PROXY_ALIAS, "runId": run_id}, on_notification=chunks
            )
        except RemoteError as error:
            tailed["error"] = error

    tailing = threading.Thread(target=tail, daemon=True)
    tailing.start()
    deadline = time.monotonic() + WAIT_S
    while not chunks.chunks:
        assert time.monotonic() < deadline
        time.sleep(0.05)

    campaign.link.stall()  # every socket stays open; nothing crosses
    campaign.ledger.fault("connection stalled")
    try:
        began = time.monotonic()
        run = campaign.status(run_id, host=PROXY_ALIAS)
        # Not a hang until some far timeout, not a verdict on the run: unknown, with why.
        assert time.monotonic() - began < KEEPALIVE_S
        assert run.state == "unknown", run
        assert run.reason
        assert wait_listed(campaign, run_id, "unknown", KEEPALIVE_S).reason
        assert run_pids(run_id), "the run itself never noticed"
    finally:
        campaign.link.resume()
    assert campaign.status(run_id, host=PROXY_ALIAS).state == "running"
    (campaign.far_run_dir(run_id) / "finish").touch()
    tailing.join(WAIT_S + 120)
    assert "error" not in tailed, tailed
    assert tailed["result"].run.state == "completed"
    far = campaign.far_log(run_id)
    assert campaign.ledger.verify("log bytes across a stall", chunks.data == far)


def reboot(campaign: Campaign, run_ids: list[str]) -> None:
    """Everything of these runs on the host dies at once, and so do its ssh sessions."""
    campaign.link.stall()
    for run_id in run_ids:
        for pid in run_pids(run_id):
            os.kill(pid, signal.SIGKILL)
    campaign.cut("a host 'reboot' (every process of the runs SIGKILLed)")
    campaign.ledger.fault("host 'reboot': run processes SIGKILLed at once")
    campaign.link.resume()


def test_every_process_killed_at_once_makes_runs_lost(campaign: Campaign) -> None:
    sleeper, stubborn, tail_me = (campaign.new_run_id() for _ in range(3))
    campaign.start(trainers.SLEEPER, run_id=sleeper, host=PROXY_ALIAS)
    campaign.start(trainers.STUBBORN_CHILD, run_id=stubborn, host=PROXY_ALIAS)
    campaign.start(trainers.TRICKLE, run_id=tail_me, host=PROXY_ALIAS)
    campaign.wait_file(campaign.far_run_dir(stubborn) / "child.pid")
    tail_client = campaign.client()
    chunks = LogCollector()
    tailed: dict[str, Any] = {}

    def tail() -> None:
        tailed["result"] = tail_client.request(
            "run/tail", {"host": PROXY_ALIAS, "runId": tail_me}, on_notification=chunks
        )

    tailing = threading.Thread(target=tail, daemon=True)
    tailing.start()
    while not chunks.chunks:
        time.sleep(0.05)

    reboot(campaign, [sleeper, stubborn, tail_me])
    # Nobody asks: the monitor finds out by itself, and says lost, not running.
    for run_id in (sleeper, stubborn, tail_me):
        run = wait_listed(campaign, run_id, "lost")
        assert run.reason == "process gone without exit status"
    # A tail of a run that died this way ends (it does not wait forever) with every byte.
    tailing.join(WAIT_S)
    assert not tailing.is_alive()
    assert tailed["result"].run.state == "lost"
    assert campaign.ledger.verify(
        "log bytes of a run lost in a reboot", chunks.data == campaign.far_log(tail_me)
    )
    # Asked directly, and asked to stop: the same truth, nothing to stop.
    assert campaign.status(sleeper, host=PROXY_ALIAS).state == "lost"
    stopped = campaign.request("run/stop", {"host": PROXY_ALIAS, "runId": stubborn})
    assert (stopped.outcome, stopped.run.state) == ("not_running", "lost")


def test_after_a_reboot_a_recycled_pid_does_not_revive_the_run(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    campaign.start(trainers.SLEEPER, run_id=run_id, host=PROXY_ALIAS)
    run_dir = campaign.far_run_dir(run_id)
    reboot(campaign, [run_id])
    # After the "reboot" the host has another boot id, and the run's old pid now belongs
    # to some other process of the same user.
    stranger = stranger_process()
    try:
        (run_dir / ".rtrain" / "train.pid").write_text(f"{stranger.pid}\n")
        meta = run_dir / ".rtrain" / "meta.json"
        text = meta.read_text()
        old_boot = text.split('"boot_id": "', 1)[1].split('"', 1)[0]
        meta.write_text(text.replace(old_boot, "00000000-0000-0000-0000-000000000000"))
        run = campaign.status(run_id, host=PROXY_ALIAS)
        assert (run.state, run.reason) == ("lost", "host rebooted since the run started")
        stopped = campaign.request("run/stop", {"host": PROXY_ALIAS, "runId": run_id})
        assert stopped.outcome == "not_running"
        assert pid_alive(stranger.pid), "stop killed a process that was not the run's"
    finally:
        stranger.kill()
        stranger.wait()
