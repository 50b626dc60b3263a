"""Fixtures for tests that talk to a real daemon process over its real socket.

Each test gets its own runtime/state/config directories (short paths: a Unix socket path
must stay under about 100 bytes), so daemons never meet; teardown stops the daemon.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient

# The class below has a property named `socket`.
Socket = socket.socket


@dataclass
class DaemonEnv:
    root: Path
    runtime: Path
    state: Path
    config: Path
    sockets: list[socket.socket] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        return self.runtime / "rtrain" / "rtrain.sock"

    @property
    def log(self) -> Path:
        return self.state / "rtrain" / "daemon.log"

    def client(self, **kwargs: object) -> DaemonClient:
        return DaemonClient.connect(**kwargs)  # type: ignore[arg-type]

    def daemon_pids(self) -> list[int]:
        """Live daemon processes started for this environment."""
        pids = []
        marker = f"XDG_RUNTIME_DIR={self.runtime}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().split(") ", 1)[1][0]
            except OSError:
                continue
            if b"rtrain.daemon" in cmdline and marker in environ.split(b"\0") and state != "Z":
                pids.append(int(entry.name))
        return pids

    def raw_socket(self) -> Socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        self.sockets.append(sock)  # closed at teardown
        sock.connect(str(self.socket))
        return sock


@pytest.fixture
def daemon_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonEnv]:
    root = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    env = DaemonEnv(root, root / "run", root / "state", root / "config")
    for path in (env.runtime, env.state, env.config):
        path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(env.runtime))
    monkeypatch.setenv("XDG_STATE_HOME", str(env.state))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(env.config))
    monkeypatch.delenv("RTRAIN_SOCKET", raising=False)
    monkeypatch.delenv("RTRAIN_NO_SPAWN", raising=False)
    try:
        yield env
    finally:
        for sock in env.sockets:
            sock.close()
        _signal_all(env.daemon_pids(), signal.SIGTERM)
        deadline = time.monotonic() + 5
        while env.daemon_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        _signal_all(env.daemon_pids(), signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def _signal_all(pids: list[int], sig: signal.Signals) -> None:
    """Signal each daemon still there: one that was ending by itself (a test's `daemon
    stop`) may be gone between the listing and the signal."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
