"""The `ops` fixture for end-to-end tests of the operations: a real daemon talking to the
real test sshds.

Each test gets an isolated daemon (see tests/daemon_fixtures.py) whose ssh config is the test
hosts' one, a fast monitor, and a private remote workdir (`~/.rtrain-t/<unique>`) that is
removed afterwards together with every process a run of the test left behind.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_fixtures import DaemonEnv
from tests.hosts import TestHosts
from tests.operations.harness import Ops

POLL_INTERVAL = "0.5"


@pytest.fixture
def ops(
    daemon_env: DaemonEnv,
    ssh_hosts: TestHosts,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Ops]:
    # Set before the first client spawns the daemon, which inherits this environment.
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    monkeypatch.setenv("RTRAIN_POLL_INTERVAL", POLL_INTERVAL)
    env = Ops(daemon_env, ssh_hosts, tmp_path, uuid.uuid4().hex[:10])
    try:
        yield env
    finally:
        env.end_processes()
        env.remove_workdirs()
