"""Which transport a host needs is found out, remembered and shown; or pinned by the user."""

from __future__ import annotations

import time
from typing import Any

import pytest

from rtrain.client.daemon_client import DaemonClient
from tests.console.conftest import Far
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import TestHosts


def host_entry(client: DaemonClient, alias: str) -> Any:
    [entry] = [h for h in client.request("hosts/list").hosts if h.alias == alias]
    return entry


def preflight(client: DaemonClient, alias: str, far: Far) -> Any:
    return client.request(
        "host/preflight", {"host": alias, "gpus": 0, "python": "python3", "workdir": far.tilde}
    )


def test_a_console_only_host_is_detected_remembered_and_shown(
    daemon_env: DaemonEnv, ssh_hosts: TestHosts, far: Far, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    with DaemonClient.connect(name="console-tests", timeout=120) as client:
        result = preflight(client, "console", far)
        assert result.ok and result.transport == "console"
        assert host_entry(client, "console").transport == "console"
        client.request("daemon/stop")
    deadline = time.monotonic() + 30
    while daemon_env.daemon_pids():
        assert time.monotonic() < deadline, "the daemon did not stop"
        time.sleep(0.05)
    with DaemonClient.connect(name="console-tests", timeout=120) as client:
        # A new daemon knows it before connecting anywhere.
        entry = host_entry(client, "console")
        assert entry.transport == "console" and entry.connection == "disconnected"
        assert preflight(client, "console", far).transport == "console"


def test_a_host_pinned_to_the_console_uses_it_even_where_exec_works(
    daemon_env: DaemonEnv, ssh_hosts: TestHosts, far: Far, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    settings = daemon_env.config / "rtrain"
    settings.mkdir(mode=0o700, exist_ok=True)
    (settings / "config.toml").write_text('[hosts.plain]\ntransport = "console"\n')
    with DaemonClient.connect(name="console-tests", timeout=120) as client:
        result = preflight(client, "plain", far)
        assert result.ok, result.reasons
        assert result.transport == "console"
        assert host_entry(client, "plain").transport == "console"
