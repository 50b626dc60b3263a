"""A tree fetch killed with the daemon (kill -9) between its streams: the next fetch sweeps
the copies the dead one left and sends only the files that had not landed."""

from __future__ import annotations

import subprocess
import threading
from typing import Any

import pytest

from tests.faults.conftest import Campaign
from tests.hosts import GPU_USER
from tests.transfers.test_engine import fetch, finished_run, one_channel, patterned
from tests.transfers.test_tree_stream import no_stream_copies

# More files than one stream carries (1,000), so that a batch lands before the kill.
COUNT = 2500


def test_a_tree_fetch_killed_with_the_daemon_resumes_with_the_files_not_home(
    campaign: Campaign,
) -> None:
    one_channel(campaign, "viaproxy")
    run_id = finished_run(campaign, host="viaproxy")
    root = campaign.far_run_dir(run_id) / "tree"
    files = {f"tree/d{n % 9}/f{n:04d}": patterned(1000 + n % 50, salt=n) for n in range(COUNT)}
    for rel, data in files.items():
        (campaign.far_run_dir(run_id) / rel).parent.mkdir(parents=True, exist_ok=True)
        (campaign.far_run_dir(run_id) / rel).write_bytes(data)
    subprocess.run(["chown", "-R", f"{GPU_USER}:{GPU_USER}", str(root)], check=True)
    dest = campaign.tmp / "home"
    killed = threading.Event()

    def kill_once_files_landed(method: str, params: Any) -> None:
        if killed.is_set() or method != "$/progress":
            return
        if any(path.is_file() for path in (dest / "tree").glob("d*/f*")):
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
                    "path": "tree",
                    "dest": str(dest),
                    "progressToken": 1,
                },
                on_notification=kill_once_files_landed,
            )
        campaign.kill_daemon()
    finally:
        campaign.link.resume()
    campaign.link.delay_s = 0.0
    home = {
        path.relative_to(dest).as_posix(): path.read_bytes()
        for path in (dest / "tree").glob("d*/f*")
        if path.is_file()
    }
    assert 0 < len(home) < COUNT
    assert all(files[rel] == data for rel, data in home.items())

    again = fetch(campaign, run_id, "tree", dest, host="viaproxy")

    for rel, data in files.items():
        assert (dest / rel).read_bytes() == data, rel
    assert again.skipped == len(home)
    assert again.sent_bytes == sum(map(len, files.values())) - sum(map(len, home.values()))
    assert no_stream_copies(dest)
