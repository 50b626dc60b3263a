"""Fixtures for the console transport's tests, against the suite's console-only gateway.

`console` runs an async body against a fresh ConsoleTransport (closed afterwards);
`far` is a private directory on the far host (removed afterwards); `damaging_ssh` puts
damaging_ssh.py first on PATH so bytes get damaged between rtrain and ssh.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from rtrain.daemon.ssh.console_transport import ConsoleTransport
from rtrain.daemon.ssh.exec_transport import ExecTransport
from tests.hosts import GPU_USER, TestHosts

T = TypeVar("T")
Body = Callable[[ConsoleTransport], Awaitable[T]]


@dataclass
class Far:
    """A directory of this test on the far host, as the transport and as root see it."""

    tilde: str
    path: Path

    def run_dir(self, name: str) -> tuple[str, Path]:
        (self.path / name).mkdir(parents=True, exist_ok=True)
        (self.path / name / ".rtrain-run").write_text(f"{name}\n")  # as prepare.sh leaves it
        shutil.chown(self.path / name, GPU_USER, GPU_USER)
        return f"{self.tilde}/{name}", self.path / name


@dataclass
class Consoles:
    hosts: TestHosts
    runtime: Path

    def run(self, body: Body[T], alias: str = "console") -> T:
        """`body(transport)` on a new ConsoleTransport for `alias`, closed afterwards."""

        async def main() -> T:
            transport = ConsoleTransport(alias, self.runtime, self.hosts.config_path)
            try:
                return await body(transport)
            finally:
                await transport.close()

        return asyncio.run(main())

    def run_exec(self, body: Callable[[ExecTransport], Awaitable[T]], alias: str = "plain") -> T:
        async def main() -> T:
            transport = ExecTransport(alias, self.runtime, self.hosts.config_path)
            try:
                return await body(transport)
            finally:
                await transport.close()

        return asyncio.run(main())


@pytest.fixture
def console(ssh_hosts: TestHosts) -> Iterator[Consoles]:
    # Short: the ControlMaster's socket lives under it.
    runtime = Path(tempfile.mkdtemp(prefix="rtc-", dir="/tmp"))
    try:
        yield Consoles(ssh_hosts, runtime)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
def far(ssh_hosts: TestHosts) -> Iterator[Far]:
    name = f"console-{uuid.uuid4().hex[:10]}"
    root = ssh_hosts.home(GPU_USER) / ".rtrain-t"
    root.mkdir(exist_ok=True)
    shutil.chown(root, GPU_USER, GPU_USER)
    path = root / name
    path.mkdir(mode=0o700)
    shutil.chown(path, GPU_USER, GPU_USER)
    try:
        yield Far(f"~/.rtrain-t/{name}", path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


@dataclass
class DamagingSsh:
    log: Path
    monkeypatch: pytest.MonkeyPatch

    def damage(self, direction: str, after: int, mode: str) -> None:
        self.monkeypatch.setenv("RTRAIN_TEST_DAMAGE", f"{direction}:{after}:{mode}")

    @property
    def damages(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


@pytest.fixture
def damaging_ssh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> DamagingSsh:
    real = shutil.which("ssh")
    assert real is not None, "ssh is not installed"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    source = Path(__file__).with_name("damaging_ssh.py")
    wrapper.write_text(f"#!{sys.executable}\n" + source.read_text())
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "damage.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("RTRAIN_TEST_REAL_SSH", real)
    monkeypatch.setenv("RTRAIN_TEST_DAMAGE_LOG", str(log))
    return DamagingSsh(log, monkeypatch)
