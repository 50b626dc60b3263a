"""`rtrain start @lab --sync mlflow`: the sync follows a pool's run to the host it is placed
on, also when it waited in the pool's queue first (placed by the daemon, not by a start)."""

from __future__ import annotations

import importlib
import time
from pathlib import Path
from typing import Any

import pytest

from tests.pools.conftest import WAIT_S, Lab
from tests.torch_python import far_trackers_python
from tests.trackers.test_mlflow_sync import TRAINER, losses


def arrived(lab: Lab, run_id: str, client: Any, count: int) -> Any:
    """The synced run here once it has `count` points: the placement, the trainer's start
    and each import take seconds on a loaded machine, so the pools' longer wait."""
    deadline = time.monotonic() + WAIT_S
    while True:
        run, curve = losses(client)
        if len(curve) >= count:
            assert curve == [round(1.0 / (s + 1), 4) for s in range(count)], curve
            return run
        shown = lab("status", "@lab", run_id, "--json").out
        assert time.monotonic() < deadline, f"{count} points never arrived: {curve}; {shown}"
        time.sleep(0.5)


def test_a_queued_pool_run_syncs_from_the_host_it_is_placed_on(
    lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = far_trackers_python()
    lab.configure({"lab": ["box1"]})  # one GPU: the second run waits for it
    uri = (tmp_path / "here-mlruns").as_uri()
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # this test's reads here too
    lab.env.update(
        MLFLOW_TRACKING_URI=uri, MLFLOW_ALLOW_FILE_STORE="true", RTRAIN_SYNC_INTERVAL="1"
    )
    holder, synced = lab.new_run_id("holder"), lab.new_run_id("synced")
    assert lab.placed(lab.start(holder)) == "box1"
    queued = lab(
        "start", "@lab", "-c", "cfg.yaml", "--run-id", synced, "--gpus", "1", "--no-follow",
        "--python", python, "--sync", "mlflow", "--", "{python}", "-c", TRAINER,
    )  # fmt: skip
    assert queued.code == 0, queued
    assert f"queued {synced} in @lab" in queued.out, queued

    lab.finish("box1", holder)  # its GPU frees: the daemon places the queued run on box1
    client = importlib.import_module("mlflow.tracking").MlflowClient(uri)
    run = arrived(lab, synced, client, 3)  # while it trains there
    assert run.data.tags["rtrain.source"].startswith(f"box1:{synced}:")
    shown = lab("status", "box1", synced, "--json").json()
    assert shown["pool"] == "@lab" and shown["synced"][0]["tracker"] == "mlflow", shown

    lab.finish("box1", synced)
    lab.wait_until(lambda: lab.status("box1", synced) == "completed", f"{synced} completed")
    deadline = time.monotonic() + WAIT_S
    while (run := arrived(lab, synced, client, 6)).info.status != "FINISHED":
        assert time.monotonic() < deadline, "the run's end never arrived here"
        time.sleep(0.2)
    found: Any = client.search_runs([run.info.experiment_id])
    assert len(found) == 1 and len(losses(client)[1]) == 6
