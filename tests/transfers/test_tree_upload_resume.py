"""A start shipping a code tree of 3,000 files, killed with the daemon (kill -9) mid-stream:
every file that landed whole on the host, verified, stays in its input cache, and the next
start sends only the others."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.faults.conftest import Campaign
from tests.operations.harness import WAIT_S
from tests.transfers.test_engine import patterned, sha256

COUNT = 3000


def start(campaign: Campaign, run_id: str, code: str, **kw: Any) -> Any:
    params = {
        "host": "viaproxy",
        "runId": run_id,
        "workdir": campaign.workdir,
        "gpus": 0,
        "config": str(campaign.file("config.yaml", "epochs: 1\n")),
        "code": code,
        "command": ["true"],
        "progressToken": 1,
    }
    return campaign.client().request("run/start", params, **kw)


def test_a_code_upload_killed_mid_stream_sends_only_the_files_that_did_not_land(
    campaign: Campaign,
) -> None:
    code = campaign.tmp / "code"
    # Each content its own (sizes differ), so each file is one entry of the cache.
    files = {f"pkg{n % 20}/m{n:04d}.py": patterned(1000 + n, salt=n) for n in range(COUNT)}
    for rel, data in files.items():
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_bytes(data)
    total = sum(map(len, files.values()))
    first = campaign.new_run_id()
    cut = False

    def kill_mid_stream(method: str, params: Any) -> None:
        nonlocal cut
        value = params.get("value", {}) if isinstance(params, dict) else {}
        done = value.get("doneBytes") or value.get("done_bytes") or 0
        if not cut and method == "$/progress" and total * 0.3 < done < total * 0.7:
            cut = True
            campaign.link.stall()
            raise KeyboardInterrupt

    campaign.link.delay_s = 0.01
    try:
        with pytest.raises(KeyboardInterrupt):
            start(campaign, first, str(code), on_notification=kill_mid_stream)
        campaign.kill_daemon()
    finally:
        campaign.link.resume()
    campaign.link.delay_s = 0.0
    # The far side reads to the cut, keeps what came whole and verified, and ends.
    first_dir = campaign.far_run_dir(first)
    deadline = time.monotonic() + WAIT_S
    while any(p.name.startswith(".rtrain-receiving") for p in first_dir.iterdir()):
        assert time.monotonic() < deadline, "the far side never saw the cut"
        time.sleep(0.05)
    cache = campaign.far_workdir / ".cache" / "inputs"
    landed = {p.name for p in cache.iterdir()}
    by_sha = {sha256(data): rel for rel, data in files.items()}
    landed_files = {by_sha[sha] for sha in landed if sha in by_sha}
    assert 0 < len(landed_files) < COUNT

    again = start(campaign, campaign.new_run_id(), str(code))

    shipped = {f.path: f for f in again.shipped}
    config = shipped.pop("config.yaml")
    assert set(shipped) == set(files)
    for rel, f in shipped.items():
        if rel in landed_files:
            assert (f.how, f.sent_bytes) == ("copied", 0), rel
        else:
            assert (f.how, f.sent_bytes) == ("sent", len(files[rel])), rel
    missing = sum(len(data) for rel, data in files.items() if rel not in landed_files)
    assert again.uploaded_bytes == missing + config.sent_bytes
    run_dir = campaign.far_run_dir(again.run.run_id)
    for rel, data in files.items():
        assert (run_dir / rel).read_bytes() == data, rel
