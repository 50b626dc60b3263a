"""The start options the Python API gained reach the daemon: `wait` queues a run that wants
more GPUs than are free, `launcher` is the one the run records."""

from __future__ import annotations

import time

from rtrain import ProcessOptions, RemoteRunner
from tests.cli.conftest import WAIT_S, WAITING_TRAINER, Cli


def test_wait_queues_and_launcher_is_recorded(cli: Cli) -> None:
    runner = RemoteRunner(alias="plain", workdir=cli.workdir)
    config = cli.file("cfg.yaml", "epochs: 1\n")
    command = ["{python}", "-c", WAITING_TRAINER]
    holder = runner.start(config, run_id=cli.new_run_id("holder"), gpus=2, command=command)
    queued = runner.start(
        config, run_id=cli.new_run_id("queued"), gpus=1, command=command, wait=True
    )
    # It may read running for the moment before its first step says it waits.
    deadline = time.monotonic() + WAIT_S
    while not (said := runner.status(queued)).startswith("queued (waiting for 1 GPU"):
        assert time.monotonic() < deadline, said
        time.sleep(0.1)
    runner.stop(queued)
    runner.stop(holder)

    run_id = cli.new_run_id()
    run = runner.start(config, run_id=run_id, gpus=0, command=command, launcher=ProcessOptions())
    listed = cli("status", "plain", run_id, "--json").json()
    assert listed["launcher"] == "process", listed
    runner.stop(run)
