"""Secrets reach the trainer and nowhere else; host keys are always checked."""

from __future__ import annotations

import secrets
import sqlite3
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import RemoteError
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import GPU_USER, TestHosts


@pytest.fixture
def ssh_env(
    daemon_env: DaemonEnv, ssh_hosts: TestHosts, monkeypatch: pytest.MonkeyPatch
) -> DaemonEnv:
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    monkeypatch.setenv("RTRAIN_POLL_INTERVAL", "0.5")
    return daemon_env


def all_cmdlines() -> list[bytes]:
    lines = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                lines.append((proc / "cmdline").read_bytes())
            except OSError:
                pass
    return lines


def test_a_secret_reaches_the_trainer_but_no_command_line_file_or_log(
    ssh_env: DaemonEnv, ssh_hosts: TestHosts, tmp_path: Path
) -> None:
    value = f"hf_{secrets.token_hex(16)}"
    config = tmp_path / "config.yaml"
    config.write_text("steps: 1\n")
    run_id = f"secret-{uuid.uuid4().hex[:8]}"
    workdir = f"~/.rtrain-sec/{run_id}"
    trainer = (
        "import os, time, hashlib; v = os.environ['HF_TOKEN']; "
        "print('token sha256', hashlib.sha256(v.encode()).hexdigest(), flush=True); "
        "time.sleep(3)"
    )
    seen_on_command_lines = False
    with DaemonClient.connect() as client:
        client.request(
            "run/start",
            {
                "host": "plain",
                "config": str(config),
                "runId": run_id,
                "workdir": workdir,
                "command": ["{python}", "-c", trainer],
                "secrets": {"HF_TOKEN": value},
            },
        )
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:  # while it runs, on both sides of the ssh link
            seen_on_command_lines |= any(value.encode() in c for c in all_cmdlines())
            time.sleep(0.1)
        logged: list[str] = []
        final = client.request(
            "run/tail",
            {"host": "plain", "runId": run_id},
            on_notification=lambda _m, p: logged.append(p.text),
        ).run
    import hashlib

    assert final.state == "completed"
    assert f"token sha256 {hashlib.sha256(value.encode()).hexdigest()}" in "".join(logged)
    assert not seen_on_command_lines
    run_dir = ssh_hosts.home(GPU_USER) / ".rtrain-sec" / run_id / run_id
    far_files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {p.name for p in far_files} >= {"meta.json", "train.log", "config.yaml"}
    local_files = [p for p in ssh_env.root.rglob("*") if p.is_file() and not p.is_socket()]
    for path in far_files + local_files:
        assert value.encode() not in path.read_bytes(), f"the secret leaked into {path}"
    db = sqlite3.connect(ssh_env.state / "rtrain" / "registry.sqlite3")
    assert value not in repr(db.execute("SELECT * FROM runs").fetchall())


def write_ssh_config(tmp_path: Path, ssh_hosts: TestHosts, known_hosts: Path) -> Path:
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host keytest\n"
        "  HostName 127.0.0.1\n"
        f"  Port {ssh_hosts.plain_port}\n"
        f"  User {GPU_USER}\n"
        f"  IdentityFile {ssh_hosts.user_key}\n"
        "  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {known_hosts}\n"
        "  StrictHostKeyChecking yes\n"
    )
    return config


@pytest.mark.parametrize("case", ["changed", "unknown"])
def test_a_changed_or_unknown_host_key_stops_the_operation_with_what_to_check(
    daemon_env: DaemonEnv,
    ssh_hosts: TestHosts,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
) -> None:
    known_hosts = tmp_path / "known_hosts"
    if case == "changed":
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "impostor")],
            check=True,
        )
        impostor = (tmp_path / "impostor.pub").read_text().split()[:2]
        known_hosts.write_text(f"[127.0.0.1]:{ssh_hosts.plain_port} {' '.join(impostor)}\n")
    else:
        known_hosts.write_text("")
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(write_ssh_config(tmp_path, ssh_hosts, known_hosts)))
    config = tmp_path / "config.yaml"
    config.write_text("steps: 1\n")
    run_id = f"hostkey-{uuid.uuid4().hex[:8]}"
    with DaemonClient.connect() as client:
        verdict = client.request("host/preflight", {"host": "keytest", "gpus": 0})
        assert not verdict.ok
        assert "host key" in verdict.reasons[0]
        with pytest.raises(RemoteError) as caught:
            client.request("run/start", {"host": "keytest", "config": str(config), "runId": run_id})
    assert caught.value.kind == "host_key_changed"
    assert "ssh keytest" in caught.value.message  # says what to run to check it
    assert not (ssh_hosts.home(GPU_USER) / ".rtrain" / run_id).exists()
    if case == "unknown":
        assert known_hosts.read_text() == ""  # no key was accepted on the user's behalf
