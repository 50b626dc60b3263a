"""What a cut fetch leaves on this machine is swept by `rtrain gc HOST`, even when the same
target is never fetched again: here, a fetch killed with the daemon (kill -9)."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tests.faults.conftest import Campaign
from tests.transfers.test_engine import (
    STRIPED,
    finished_run,
    one_channel,
    partial_records,
    patterned,
    write_far,
)


def test_gc_sweeps_the_partial_data_a_killed_fetch_left(campaign: Campaign) -> None:
    one_channel(campaign, "viaproxy")
    run_id = finished_run(campaign, host="viaproxy")
    write_far(campaign, run_id, "model.bin", patterned(STRIPED, salt=29))
    dest = campaign.tmp / "home"
    killed = threading.Event()

    def kill_once_a_piece_is_verified(method: str, params: Any) -> None:
        if killed.is_set() or method != "$/progress":
            return
        for record in partial_records(dest):
            if json.loads(record.read_text())["pieces"]:
                killed.set()
                campaign.link.stall()
                raise KeyboardInterrupt

    campaign.link.delay_s = 0.02
    try:
        with pytest.raises(KeyboardInterrupt):
            campaign.client().request(
                "run/fetch",
                {
                    "host": "viaproxy",
                    "runId": run_id,
                    "path": "model.bin",
                    "dest": str(dest),
                    "progressToken": 1,
                },
                on_notification=kill_once_a_piece_is_verified,
            )
        campaign.kill_daemon()
    finally:
        campaign.link.resume()
    campaign.link.delay_s = 0.0
    [record] = partial_records(dest)
    left = sum(path.stat().st_size for path in record.parent.iterdir())
    # Another host's gc leaves it alone.
    other = campaign.request("host/gc", {"host": "plain", "workdir": campaign.workdir})
    assert (other.local_partials, other.local_freed_bytes) == (0, 0)
    assert record.exists()
    swept = campaign.request("host/gc", {"host": "viaproxy", "workdir": campaign.workdir})
    assert swept.local_partials == 1
    assert swept.local_freed_bytes == left > 0
    assert not (dest / ".rtrain-partial").exists()
    assert list(dest.iterdir()) == []
    again = campaign.request("host/gc", {"host": "viaproxy", "workdir": campaign.workdir})
    assert (again.local_partials, again.local_freed_bytes) == (0, 0)
