"""The fault campaign's world: an isolated daemon, the real test sshd reached through a TCP
proxy the test can delay, stall or cut, a private remote workdir, and a ledger that counts
every fault the tests inject (printed at the end of the session).

The `campaign` fixture builds on the operations harness (tests/operations/harness.py): the
same daemon isolation, ssh config and cleanup of what runs left behind.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rtrain.client.daemon_client import DaemonClient
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import GPU_USER, TcpProxy, TestHosts
from tests.operations.harness import Ops

POLL_INTERVAL = "0.5"
# The alias that reaches the plain sshd through the test's proxy.
PROXY_ALIAS = "viaproxy"


@dataclass
class Ledger:
    """What the campaign did, summed over the session: the figures of its report."""

    faults: Counter[str] = field(default_factory=Counter)
    bad_inputs: Counter[str] = field(default_factory=Counter)
    load: Counter[str] = field(default_factory=Counter)
    checks: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)

    def fault(self, kind: str, count: int = 1) -> None:
        self.faults[kind] += count

    def bad_input(self, kind: str, count: int = 1) -> None:
        self.bad_inputs[kind] += count

    def verify(self, what: str, ok: bool) -> bool:
        """Count one check of "nothing lost"; remember it when it failed (the test asserts)."""
        self.checks[what] += 1
        if not ok:
            self.lost.append(what)
        return ok


LEDGER = Ledger()


@dataclass
class Campaign(Ops):
    """One test's handle: the operations harness plus the proxy and the fault ledger."""

    proxy: TcpProxy | None = None
    ledger: Ledger = field(default_factory=lambda: LEDGER)
    mounts: list[Path] = field(default_factory=list)

    @property
    def link(self) -> TcpProxy:
        assert self.proxy is not None
        return self.proxy

    def client(self) -> DaemonClient:
        self.ledger.load["client connections"] += 1
        return super().client()

    def cut(self, during: str) -> None:
        """Close every connection through the proxy now (the route reset)."""
        self.link.cut()
        self.ledger.fault(f"connection cut during {during}")

    def far_log(self, run_id: str) -> bytes:
        return (self.far_run_dir(run_id) / "train.log").read_bytes()

    def small_disk(self, name: str, size: str = "4m") -> tuple[str, Path]:
        """A tmpfs of `size` in the remote user's home: (workdir as the user writes it, path)."""
        path = self.far_workdir / name
        path.mkdir(parents=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=700", "tmpfs", str(path)],
            check=True,
            capture_output=True,
        )
        self.mounts.append(path)
        shutil.chown(path, GPU_USER, GPU_USER)
        for parent in (self.far_workdir, self.far_workdir.parent):
            shutil.chown(parent, GPU_USER, GPU_USER)
        return f"{self.workdir}/{name}", path


def can_mount_tmpfs(base: Path) -> str | None:
    """None when this machine lets the tests mount a small tmpfs, else why not."""
    probe = base / "mount-probe"
    probe.mkdir(exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        return done.stderr.strip() or f"mount exited {done.returncode}"
    subprocess.run(["umount", str(probe)], check=False, capture_output=True)
    return None


@pytest.fixture
def campaign(
    daemon_env: DaemonEnv,
    ssh_hosts: TestHosts,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Campaign]:
    proxy = TcpProxy(ssh_hosts.plain_port)
    ssh_hosts.add_alias(PROXY_ALIAS, proxy.port)
    # Set before the first client spawns the daemon, which inherits this environment.
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    monkeypatch.setenv("RTRAIN_POLL_INTERVAL", POLL_INTERVAL)
    env = Campaign(daemon_env, ssh_hosts, tmp_path, uuid.uuid4().hex[:10], proxy=proxy)
    try:
        yield env
    finally:
        LEDGER.load["runs started (or tried)"] += len(env.run_ids)
        env.end_processes()
        proxy.close()
        for mount in env.mounts:
            subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)
        env.remove_workdirs()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not (LEDGER.faults or LEDGER.bad_inputs or LEDGER.load):
        return
    write = terminalreporter.write_line
    terminalreporter.section("fault campaign")
    for title, counts in (
        ("faults injected", LEDGER.faults),
        ("bad inputs tried", LEDGER.bad_inputs),
        ("load", LEDGER.load),
        ("checks that nothing was lost", LEDGER.checks),
    ):
        write(f"{title}: {sum(counts.values())}")
        for kind, count in sorted(counts.items()):
            write(f"  {count:6d}  {kind}")
    write(f"lost: {len(LEDGER.lost)}" + "".join(f"\n  {what}" for what in LEDGER.lost))


def stranger_process() -> subprocess.Popen[bytes]:
    """A process of the remote user that has nothing to do with any run."""
    return subprocess.Popen(
        ["sleep", "300"],
        user=GPU_USER,
        group=GPU_USER,
        extra_groups=[],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
