"""A run's maximum duration on a console-only host: the watcher that keeps it is started by
the same launch through the gateway's PTY, and outlives it as the run does."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient
from tests.console.conftest import Far
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import TestHosts

WAIT_S = 60.0
STILL = "import time\nprint('sleeping', flush=True)\nwhile True:\n    time.sleep(0.1)\n"


def test_a_run_past_its_max_duration_on_a_console_host_is_stopped(
    daemon_env: DaemonEnv,
    ssh_hosts: TestHosts,
    far: Far,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    config = tmp_path / "config.yaml"
    config.write_text("steps: 1\n")
    run_id = f"limit-{os.getpid()}"
    with DaemonClient.connect(name="console-tests", timeout=120) as client:
        started = client.request(
            "run/start",
            {
                "host": "console",
                "runId": run_id,
                "workdir": far.tilde,
                "gpus": 0,
                "config": str(config),
                "command": ["{python}", "-c", STILL],
                "maxDuration": 2,
                "stallAfter": 0,
            },
        )
        assert started.run.state == "running"
        # rtrain's own scripts are no upload of the user's.
        assert started.uploaded_bytes == len("steps: 1\n")
        deadline = time.monotonic() + WAIT_S
        while True:
            run = client.request("run/status", {"host": "console", "runId": run_id}).run
            if run.state != "running":
                break
            assert time.monotonic() < deadline, run
            time.sleep(0.2)
    assert (run.state, run.reason) == ("stopped", "max duration 2s")
    assert (far.path / run_id / ".rtrain" / "limit_stop").read_text() == "max_duration 2\n"
