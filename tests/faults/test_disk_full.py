"""The far disk full, during the upload and during training: a small tmpfs mounted in the
remote user's home serves as the workdir. A clear error, and nothing reported as shipped (or
as ended well) that was not."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rtrain.client.errors import RemoteError
from tests.faults.conftest import Campaign, can_mount_tmpfs
from tests.operations.processes import run_pids

MIB = 1024 * 1024

# Writes a checkpoint until the disk is full and fails on it, as a real trainer would.
FILLS_THE_DISK = """
import sys
print("training", flush=True)
with open("checkpoint.bin", "wb") as f:
    while True:
        f.write(b"w" * 65536)
        f.flush()
"""

# Fills the disk, survives the error, and goes on "training" until stopped.
FILLS_THEN_WAITS = """
import os, time
print("training", flush=True)
try:
    with open("checkpoint.bin", "wb") as f:
        while True:
            f.write(b"w" * 65536)
            f.flush()
except OSError as error:
    pass
open("full", "w").close()
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def small_workdir(campaign: Campaign) -> tuple[str, Path]:
    why = can_mount_tmpfs(campaign.tmp)
    if why is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cannot mount a small filesystem for the disk-full tests: {why}")
        pytest.skip(f"cannot mount a small filesystem here: {why}")
    return campaign.small_disk("small", "4m")


def test_a_full_disk_during_the_upload(campaign: Campaign, small_workdir: tuple[str, Path]) -> None:
    workdir, far_workdir = small_workdir
    run_id = campaign.new_run_id()
    dataset = campaign.tmp / "data.bin"
    dataset.write_bytes(os.urandom(6 * MIB))
    progress: list[Any] = []
    with pytest.raises(RemoteError) as caught:
        campaign.request(
            "run/start",
            {
                "host": "plain",
                "runId": run_id,
                "workdir": workdir,
                "gpus": 0,
                "config": str(campaign.file("config.yaml", "epochs: 1\n")),
                "dataset": str(dataset),
                "command": ["{python}", "-c", "print('never')"],
                "progressToken": "up",
            },
            on_notification=lambda method, params: (
                progress.append(params.value) if method == "$/progress" else None
            ),
        )
    campaign.ledger.fault("far disk full during the upload")
    error = caught.value
    assert error.kind == "disk_full", error.message
    # The dataset's pieces and the small files go side by side: whichever write finds the
    # disk full first is the one the sentence names.
    assert "disk is full" in error.message
    assert "data.bin" in error.message or "shipping small files" in error.message
    assert "nothing was started" in error.message
    # Nothing reported as shipped: no "end" of the upload was ever announced...
    assert [p.kind for p in progress if p.kind == "end"] == []
    # ...and the host holds no dataset under its name, no partial copy, no trainer.
    run_dir = far_workdir / run_id
    assert not (run_dir / "data.bin").exists()
    assert not (run_dir / "data.bin.part").exists()
    assert not (run_dir / "meta.json").exists()
    assert run_pids(run_id) == []
    assert run_id not in {r.run_id for r in campaign.request("runs/list", {}).runs}


def test_a_full_disk_during_a_code_tree_stream_is_one_sentence_and_nothing_starts(
    campaign: Campaign, small_workdir: tuple[str, Path]
) -> None:
    workdir, far_workdir = small_workdir
    run_id = campaign.new_run_id()
    code = campaign.tmp / "code"
    # 400 small files, 8 MB: they go in one stream, and fill the 4 MB disk on the way.
    for n in range(400):
        (code / f"pkg{n % 7}").mkdir(parents=True, exist_ok=True)
        (code / f"pkg{n % 7}" / f"m{n}.py").write_bytes(os.urandom(20_000))
    with pytest.raises(RemoteError) as caught:
        campaign.request(
            "run/start",
            {
                "host": "plain",
                "runId": run_id,
                "workdir": workdir,
                "gpus": 0,
                "config": str(campaign.file("config.yaml", "epochs: 1\n")),
                "code": str(code),
                "command": ["{python}", "-c", "print('never')"],
            },
        )
    campaign.ledger.fault("far disk full during a code tree stream")
    error = caught.value
    assert error.kind == "disk_full", error.message
    assert "disk is full" in error.message and "nothing was started" in error.message
    run_dir = far_workdir / run_id
    assert not (run_dir / "pkg0").exists() and not (run_dir / "meta.json").exists()
    assert run_pids(run_id) == []
    assert run_id not in {r.run_id for r in campaign.request("runs/list", {}).runs}


def test_a_full_disk_during_training_fails_the_run_with_its_exit_code(
    campaign: Campaign, small_workdir: tuple[str, Path]
) -> None:
    workdir, far_workdir = small_workdir
    run_id = campaign.new_run_id()
    campaign.start(FILLS_THE_DISK, run_id=run_id, workdir=workdir)
    campaign.ledger.fault("far disk full during training")
    run = campaign.wait_state(run_id, lambda run: run.state != "running")
    # The trainer died of the full disk: failed, with its real exit code, not lost.
    assert (run.state, run.exit_code) == ("failed", 1), run
    tailed, chunks = campaign.tail(run_id)
    assert tailed.run.state == "failed"
    log = (far_workdir / run_id / "train.log").read_bytes()
    assert chunks.data == log
    assert log.startswith(b"training\n")


def test_a_full_disk_does_not_keep_a_stop_from_being_told(
    campaign: Campaign, small_workdir: tuple[str, Path]
) -> None:
    workdir, far_workdir = small_workdir
    run_id = campaign.new_run_id()
    campaign.start(FILLS_THEN_WAITS, run_id=run_id, workdir=workdir)
    campaign.ledger.fault("far disk full during training (then stopped)")
    campaign.wait_file(far_workdir / run_id / "full", lambda _text: True)
    assert campaign.status(run_id).state == "running"
    stopped = campaign.request("run/stop", {"host": "plain", "runId": run_id, "grace": 5})
    assert stopped.outcome == "stopped"
    assert run_pids(run_id) == []
    assert stopped.run.state == "stopped"
    assert campaign.status(run_id).state == "stopped"
