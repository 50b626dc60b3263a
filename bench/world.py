"""Everything the benchmarks run against, set up once and torn down at the end.

The suite's own sshd on loopback (tests/hosts), reached directly and through delay proxies;
an isolated rtrain daemon; a private remote work directory; and the `rtrain` console script.
Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.delay_proxies import DelayProxies
from bench.isolated_daemon import IsolatedDaemon
from tests.hosts import GPU_USER, TestHosts, start_test_hosts

# Kills what the benchmark's runs left and removes the work directory; runs as the remote
# user. A pid file is trusted only while its process still carries the run's marker (rtrain's
# RTRAIN_RUN_ID, or the per-step runs' RTRAIN_BENCH): a pid reused since is never touched.
CLEANUP = """
workdir=$1
tag=$2
[ -d "$workdir" ] || exit 0
for pid_file in "$workdir"/*/train.pid "$workdir"/*/.rtrain/train.pid; do
    [ -f "$pid_file" ] || continue
    pid=$(cat "$pid_file")
    case $pid in ''|*[!0-9]*) continue ;; esac
    [ "$pid" -gt 1 ] || continue
    run_dir=${pid_file%/train.pid}
    run_dir=${run_dir%/.rtrain}
    if tr '\\0' '\\n' <"/proc/$pid/environ" 2>/dev/null |
        grep -qx -e "RTRAIN_RUN_ID=${run_dir##*/}" -e "RTRAIN_BENCH=$tag"; then
        kill -s KILL -- "-$pid" 2>/dev/null || kill -s KILL "$pid" 2>/dev/null
    fi
done
rm -rf -- "$workdir"
rmdir -- "${workdir%/*}" 2>/dev/null
exit 0
"""


@dataclass(frozen=True)
class Link:
    """One way to reach the far host: its ssh alias and the one-way delay added (None: direct)."""

    alias: str
    delay_ms: float | None

    @property
    def label(self) -> str:
        return "direct" if self.delay_ms is None else f"proxy +{self.delay_ms:g} ms"


class BenchWorld:
    def __init__(self, root: Path, delays_ms: list[float]) -> None:
        self.root = root
        # A fresh directory per invocation: the remote home is shared with test sessions.
        self.tag = f"{int(time.time())}-{os.getpid()}"
        self.workdir_rel = f".rtrain-bench/{self.tag}"
        self.hosts: TestHosts = start_test_hosts(root / "hosts")
        self.proxies: DelayProxies | None = None
        self.daemon: IsolatedDaemon | None = None
        try:
            self.proxies = DelayProxies(self.hosts.plain_port, [d / 1000 for d in delays_ms])
            self.links = [Link("bench-direct", None)]
            self.hosts.add_alias("bench-direct", self.hosts.plain_port)
            for delay in delays_ms:
                link = Link(f"bench-d{delay:g}", delay)
                self.hosts.add_alias(link.alias, self.proxies.ports[delay / 1000])
                self.links.append(link)
            self.daemon = IsolatedDaemon(root / "daemon", self.hosts.config_path)
            self.daemon.start()
        except BaseException:
            self.close()
            raise

    @property
    def ssh_config(self) -> Path:
        return self.hosts.config_path

    @property
    def workdir(self) -> str:
        """The remote work directory as rtrain takes it (`~/...`)."""
        return f"~/{self.workdir_rel}"

    @property
    def workdir_abs(self) -> str:
        return str(self.hosts.home(GPU_USER) / self.workdir_rel)

    def link(self, delay_ms: float | None) -> Link:
        return next(link for link in self.links if link.delay_ms == delay_ms)

    def local_dir(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    def far_side(self, script: str, *args: str) -> str:
        """Run a shell script as the remote user, without ssh (setup and cleanup only)."""
        done = self.hosts.run_as(GPU_USER, ["sh", "-c", script, "bench", *args], timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"far-side setup failed: {done.stderr.strip()}")
        return done.stdout

    def close(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()
        try:
            self.far_side(CLEANUP, self.workdir_abs, self.tag)
        except Exception as error:  # a cleanup failure must not hide the results
            print(f"bench: cleanup of the remote work directory failed: {error}", file=sys.stderr)
        if self.proxies is not None:
            self.proxies.close()
        self.hosts.close()
        shutil.rmtree(self.root, ignore_errors=True)


def rtrain_command() -> list[str]:
    """The installed console script itself, not a shim in front of it (pyenv's adds ~0.1 s)."""
    beside = Path(sys.executable).with_name("rtrain")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("rtrain")
    if found is None:
        raise RuntimeError("the `rtrain` command is not installed (pip install -e .)")
    return [found]
