"""Fixtures for end-to-end tests of the `rtrain` command and the Python API.

`cli` runs the installed console script as a subprocess, the way a user's shell would, with an
isolated daemon (tests/daemon_fixtures.py), the test hosts' ssh config and a fast monitor. Each
test gets a private remote workdir on `plain` (`~/.rtrain-cli/<tag>`) and a local one under the
daemon's temp dir; both are removed afterwards, with every process its runs left behind.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.cli.leftovers import kill_marked
from tests.cli.rtrain_command import Outcome, RunningCommand, run_rtrain
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import GPU_USER, TcpProxy, TestHosts

if TYPE_CHECKING:
    from tests.cli.tmux_terminal import Tmux

WAIT_S = 30.0
# The plain host reached through a proxy the test can stall or cut (the `link` fixture).
PROXIED_ALIAS = "awayhost"
POLL_INTERVAL = "0.5"

# A config for the demo trainer that finishes in well under a second without torch.
QUICK_DEMO_CONFIG = """\
steps: 20
log_every: 5
checkpoint_every: 10
context: 3
hidden: 16
backend: python
sleep_per_step: 0
"""

# Writes known files to fetch, then exits 0.
OUTPUTS_TRAINER = """
import os
os.makedirs("lora_model/shards", exist_ok=True)
with open("lora_model/adapter.txt", "wb") as f:
    f.write(b"0123456789")
with open("lora_model/shards/part-0.bin", "wb") as f:
    f.write(bytes(range(250)) * 10)
print("step 1 | loss 1.0", flush=True)
print("saved lora_model/", flush=True)
"""

# Prints a line, then waits for the file `finish` in its run dir: a run that lasts as long as
# the test needs it to.
WAITING_TRAINER = """
import os, time
print("step 1 | loss 1.0", flush=True)
while not os.path.exists("finish"):
    time.sleep(0.05)
print("step 2 | loss 0.5", flush=True)
"""

FAILING_TRAINER = """
import sys
print("step 1 | loss 1.0", flush=True)
print("out of patience", file=sys.stderr, flush=True)
sys.exit(3)
"""


@dataclass
class Cli:
    """One test's world: its daemon's env, the hosts, a working directory, its run ids."""

    daemon: DaemonEnv
    hosts: TestHosts
    cwd: Path
    tag: str
    env: dict[str, str]
    running: list[RunningCommand] = field(default_factory=list)
    count: int = 0

    def __call__(self, *args: str, cwd: Path | None = None) -> Outcome:
        return run_rtrain(list(args), env=self.env, cwd=cwd or self.cwd)

    def spawn(self, *args: str) -> RunningCommand:
        command = RunningCommand(list(args), env=self.env, cwd=self.cwd)
        self.running.append(command)
        return command

    # -- names and places -------------------------------------------------------------------

    def new_run_id(self, name: str = "run") -> str:
        self.count += 1
        return f"{name}-{self.tag}-{self.count}"

    @property
    def workdir(self) -> str:
        """The remote workdir as a user writes it: `~` is expanded by the far shell."""
        return f"~/.rtrain-cli/{self.tag}"

    @property
    def far_workdir(self) -> Path:
        """The same directory as root sees it on this machine."""
        return self.hosts.home(GPU_USER) / ".rtrain-cli" / self.tag

    def far_run_dir(self, run_id: str) -> Path:
        return self.far_workdir / run_id

    @property
    def local_workdir(self) -> Path:
        """The workdir of runs on the embedded host `local`."""
        return self.daemon.root / "local-runs"

    def file(self, name: str, text: str) -> Path:
        path = self.cwd / name
        path.write_text(text)
        return path

    # -- common steps -----------------------------------------------------------------------

    def start(self, run_id: str, *command: str, host: str = "plain", **options: str) -> Outcome:
        """`rtrain start HOST -c cfg.yaml --no-follow ... -- COMMAND`, expected to succeed."""
        if not (self.cwd / "cfg.yaml").exists():
            self.file("cfg.yaml", QUICK_DEMO_CONFIG)
        workdir = str(self.local_workdir) if host == "local" else self.workdir
        args = ["start", host, "-c", "cfg.yaml", "--run-id", run_id, "--workdir", workdir]
        args += ["--gpus", "0", "--no-follow"]
        for name, value in options.items():
            args += [f"--{name.replace('_', '-')}", value]
        if command:
            args += ["--", *command]
        done = self(*args)
        assert done.code == 0, done
        return done

    def wait_state(self, host: str, run_id: str, state: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while True:
            done = self("status", host, run_id)
            if done.out.strip() == state:
                return
            assert time.monotonic() < deadline, f"{run_id} never became {state!r}: {done}"
            time.sleep(0.2)

    def wait_far_log(self, run_id: str, text: str) -> None:
        log = self.far_run_dir(run_id) / "train.log"
        deadline = time.monotonic() + WAIT_S
        while not (log.exists() and text in log.read_text(errors="replace")):
            assert time.monotonic() < deadline, f"{text!r} never reached {log}"
            time.sleep(0.05)

    def finish(self, run_id: str) -> None:
        """Let a WAITING_TRAINER end (root may write into the far user's run dir)."""
        (self.far_run_dir(run_id) / "finish").touch()


@pytest.fixture
def cli(
    daemon_env: DaemonEnv,
    ssh_hosts: TestHosts,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Cli]:
    # Set here too, so an in-process client (the Python API) spawns the same kind of daemon.
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    monkeypatch.setenv("RTRAIN_POLL_INTERVAL", POLL_INTERVAL)
    monkeypatch.delenv("_RTRAIN_COMPLETE", raising=False)
    monkeypatch.chdir(tmp_path)
    env = os.environ.copy()
    cli = Cli(daemon_env, ssh_hosts, tmp_path, uuid.uuid4().hex[:8], env)
    try:
        yield cli
    finally:
        for command in cli.running:
            command.kill()
        kill_marked(cli.tag)
        shutil.rmtree(cli.far_workdir, ignore_errors=True)
        shutil.rmtree(cli.local_workdir, ignore_errors=True)


@pytest.fixture
def link(cli: Cli, ssh_hosts: TestHosts) -> Iterator[TcpProxy]:
    """A proxy in front of the plain host: the alias `awayhost` reaches it through it."""
    proxy = TcpProxy(ssh_hosts.plain_port)
    ssh_hosts.add_alias(PROXIED_ALIAS, proxy.port)
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def terminal(cli: Cli) -> Iterator[Tmux]:
    """A terminal (tmux) in this test's world, closed afterwards."""
    from tests.cli.tmux_terminal import Tmux  # it reads this module's WAIT_S

    tmux = Tmux(cli.env, cli.cwd)
    try:
        yield tmux
    finally:
        tmux.close()
