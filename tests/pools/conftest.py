"""Fixtures for pools: three GPU hosts of their own (tests/hosts/pool_hosts.py), and for
each test a daemon of its own whose config.toml names them, with a private workdir on each
host (the GPU claims live there, so no other test's runs hold these tests' GPUs)."""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli.leftovers import kill_marked
from tests.cli.rtrain_command import Outcome, run_rtrain
from tests.daemon_fixtures import DaemonEnv
from tests.hosts import TestHosts
from tests.hosts.pool_hosts import POOL_GPUS, PoolHosts

WAIT_S = 60.0
POLL_INTERVAL = "0.5"

# Says which GPUs it sees, then runs until the file `finish` appears in its run dir.
HOLDER = (
    "import os, time\n"
    "print('cuda=' + repr(os.environ.get('CUDA_VISIBLE_DEVICES')), flush=True)\n"
    "while not os.path.exists('finish'):\n"
    "    time.sleep(0.05)\n"
)


@pytest.fixture(scope="session")
def pool_hosts(ssh_hosts: TestHosts) -> Iterator[PoolHosts]:
    hosts = PoolHosts(ssh_hosts)
    try:
        hosts.start()
        yield hosts
    finally:
        hosts.close()


@dataclass
class Lab:
    """One test's world: its daemon's env and config, the pool hosts, its run ids."""

    daemon: DaemonEnv
    hosts: PoolHosts
    cwd: Path
    tag: str
    env: dict[str, str]
    count: int = 0

    def __call__(self, *args: str, env: Mapping[str, str] | None = None) -> Outcome:
        return run_rtrain(list(args), env=dict(env or self.env), cwd=self.cwd)

    def new_run_id(self, name: str = "run") -> str:
        self.count += 1
        return f"{name}-{self.tag}-{self.count}"

    @property
    def workdir(self) -> str:
        return f"~/.rtrain-pl/{self.tag}"

    def far_run_dir(self, alias: str, run_id: str) -> Path:
        return self.hosts.home(alias) / ".rtrain-pl" / self.tag / run_id

    def configure(self, pools: Mapping[str, Sequence[str]], config_dir: Path | None = None) -> None:
        """config.toml: every host of the pools with this test's workdir, and the pools."""
        lines = []
        for alias in sorted({a for hosts in pools.values() for a in hosts}):
            lines += [f"[hosts.{alias}]", f'workdir = "{self.workdir}"', ""]
        for name, hosts in pools.items():
            listed = ", ".join(f'"{alias}"' for alias in hosts)
            lines += [f"[pools.{name}]", f"hosts = [{listed}]", ""]
        folder = (config_dir or self.daemon.config) / "rtrain"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.toml").write_text("\n".join(lines))

    def start(self, run_id: str, *extra: str, where: str = "@lab", gpus: int = 1) -> Outcome:
        """`rtrain start @lab` of a HOLDER run; the outcome whatever it is."""
        if not (self.cwd / "cfg.yaml").exists():
            (self.cwd / "cfg.yaml").write_text("steps: 1\n")
        return self(
            "start", where, "-c", "cfg.yaml", "--run-id", run_id, "--gpus", str(gpus),
            "--no-follow", *extra, "--", "{python}", "-c", HOLDER,
        )  # fmt: skip

    def placed(self, outcome: Outcome) -> str:
        """The host a start's one line says the run went to."""
        found = re.search(r"^placed on (\S+):", outcome.out, re.MULTILINE)
        assert found, outcome
        return found.group(1)

    def seen_gpus(self, alias: str, run_id: str) -> str:
        log = self.far_run_dir(alias, run_id) / "train.log"
        self.wait_until(lambda: log.exists() and "cuda=" in log.read_text(), f"{log} says cuda")
        found = re.search(r"^cuda=(.*)$", log.read_text(), re.MULTILINE)
        assert found, log.read_text()
        return found.group(1)

    def finish(self, alias: str, run_id: str) -> None:
        (self.far_run_dir(alias, run_id) / "finish").touch()

    def status(self, where: str, run_id: str) -> str:
        return self("status", where, run_id).out.strip()

    def wait_until(self, done: Callable[[], object], what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not done():
            assert time.monotonic() < deadline, f"never: {what}"
            time.sleep(0.2)

    def pools(self, env: Mapping[str, str] | None = None) -> dict[str, Any]:
        listed = self("pools", "--json", env=env)
        assert listed.code == 0, listed
        return {pool["name"]: pool for pool in listed.json()}


@pytest.fixture
def lab(
    daemon_env: DaemonEnv,
    pool_hosts: PoolHosts,
    ssh_hosts: TestHosts,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> Iterator[Lab]:
    monkeypatch.setenv("RTRAIN_SSH_CONFIG", str(ssh_hosts.config_path))
    monkeypatch.setenv("RTRAIN_POLL_INTERVAL", POLL_INTERVAL)
    monkeypatch.chdir(tmp_path)
    world = Lab(daemon_env, pool_hosts, tmp_path, uuid.uuid4().hex[:8], os.environ.copy())
    try:
        yield world
    finally:
        kill_marked(world.tag)
        for alias in POOL_GPUS:
            shutil.rmtree(pool_hosts.home(alias) / ".rtrain-pl" / world.tag, ignore_errors=True)
