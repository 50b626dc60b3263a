"""A start's launch.sh, opened ahead beside the claim and waiting on its stdin for the go: a
start that fails while shipping, or a daemon killed while it ships, ends that script with
nothing launched (no process of the run, no launch record on the host)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from rtrain.client.errors import RemoteError
from tests.faults.conftest import Campaign
from tests.faults.test_connection_cuts import start_params, wait_for
from tests.faults.test_daemon_kills import kill_daemon_now
from tests.operations import trainers
from tests.operations.harness import RequestInThread
from tests.operations.processes import argv_pids, run_pids

MIB = 1024 * 1024


def waiting_launches(run_id: str) -> list[int]:
    """The far `sh` running launch.sh --ahead for `run_id` (its own arguments say which run;
    the local ssh carries the whole far command as one word, so it never matches)."""
    return argv_pids(lambda argv: argv[-3:] == [b"--ahead", run_id.encode(), b""])


def assert_nothing_launched(campaign: Campaign, run_id: str) -> None:
    wait_for("the waiting launch to end", lambda: not waiting_launches(run_id))
    assert run_pids(run_id) == []
    run_dir = campaign.far_run_dir(run_id)
    for record in ("meta.json", ".rtrain/meta.json", ".rtrain/train.pid", "rtrain-run"):
        assert not (run_dir / record).exists(), record


def test_a_start_that_fails_while_shipping_launches_nothing(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    dataset = campaign.tmp / "data.bin"
    dataset.write_bytes(os.urandom(32 * MIB))
    campaign.link.delay_s = 0.02  # a WAN: the upload takes long enough to change the file
    seen_waiting: list[int] = []

    def on_progress(method: str, params: Any) -> None:
        if method != "$/progress" or params.value.kind != "report" or seen_waiting:
            return
        total = params.value.total_bytes or 0
        if 0 < (params.value.done_bytes or 0) < total / 2:
            seen_waiting.extend(waiting_launches(run_id) or [0])
            # The bytes still to go are no longer the ones hashed: the shipping fails.
            dataset.write_bytes(os.urandom(32 * MIB))

    with pytest.raises(RemoteError) as caught:
        campaign.request(
            "run/start",
            start_params(
                campaign, run_id, trainers.SLEEPER, dataset=str(dataset), progressToken="up"
            ),
            on_notification=on_progress,
        )
    assert seen_waiting and seen_waiting[0] != 0, "no launch waited while the start shipped"
    assert "changed while it was shipped" in caught.value.message
    assert "nothing was started" in caught.value.message
    assert_nothing_launched(campaign, run_id)


def test_a_daemon_killed_while_shipping_launches_nothing(campaign: Campaign) -> None:
    run_id = campaign.new_run_id()
    dataset = campaign.tmp / "data.bin"
    dataset.write_bytes(os.urandom(32 * MIB))
    params = start_params(campaign, run_id, trainers.SLEEPER, dataset=str(dataset))
    start = RequestInThread(campaign.client(), "run/start", params)
    # Claimed, its launch waiting: then the link holds still, so the start is mid-shipping
    # when the daemon dies, whatever the load.
    start.wait_for(lambda: campaign.far_run_dir(run_id).is_dir() and bool(waiting_launches(run_id)))
    campaign.link.stall()
    kill_daemon_now(campaign, "start, while shipping")
    campaign.link.resume()
    start.join()
    assert start.result is None
    assert_nothing_launched(campaign, run_id)
