"""Benchmark 5: the daemon tracking many active runs over many hosts.

The runs are real: each is a run directory (pid file, meta.json) on the far side with a live
process carrying the run's marker, so every poll finds them running and they stay active.
The hosts are aliases of the one sshd, each with its own ControlMaster and work directory.
The daemon is the real one (bench/counting_daemon.py only adds counters); its registry is
filled before it starts, as after a restart with that many runs under way.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.isolated_daemon import IsolatedDaemon
from bench.processes import run_checked
from bench.sample import Sample
from bench.world import BenchWorld, rtrain_command
from rtrain.daemon.registry import Registry
from rtrain.protocol.messages import RunInfo
from tests.hosts import GPU_USER

CLK_TCK = os.sysconf("SC_CLK_TCK")
WARM_ROUNDS = 2
ROUND_TIMEOUT_S = 180.0


@dataclass
class ScaleFigures:
    hosts: int
    runs: int
    interval_s: float
    window_s: float = 0.0
    rounds: int = 0
    polls_per_host_round: float = 0.0
    commands_per_host_round: float = 0.0
    sshd_sessions_per_host_round: float = 0.0
    last_round_s: float = 0.0
    daemon_cpu_percent: float = 0.0
    ssh_clients_cpu_percent: float = 0.0
    masters_cpu_percent: float = 0.0
    rss_mb: float = 0.0
    peak_rss_mb: float = 0.0
    runs_list_client_s: Sample = field(default_factory=Sample)
    info_during_poll_s: Sample = field(default_factory=Sample)
    runs_list_command_s: Sample = field(default_factory=Sample)


@dataclass
class _Snapshot:
    at: float
    rounds: int
    polls: int
    commands: int
    sessions: int
    daemon_ticks: int
    children_ticks: int
    masters_ticks: int


class ScaleBench:
    def __init__(
        self, world: BenchWorld, hosts: int, runs: int, interval_s: float, rounds: int
    ) -> None:
        self.world = world
        self.host_count = hosts
        self.run_count = runs
        self.interval_s = interval_s
        self.rounds = rounds
        self.aliases = [f"bench-s{index:02d}" for index in range(hosts)]
        self.base = Path(world.workdir_abs) / "scale"
        self.counts = world.local_dir("scale") / "counts.json"
        self.daemon = IsolatedDaemon(
            world.root / "scale-daemon",
            world.ssh_config,
            poll_interval_s=interval_s,
            module="bench.counting_daemon",
            extra_env={"RTRAIN_BENCH_COUNTS": str(self.counts)},
        )
        self._sleepers: list[subprocess.Popen[bytes]] = []

    def run(self) -> ScaleFigures:
        figures = ScaleFigures(self.host_count, self.run_count, self.interval_s)
        try:
            self._far_side_runs()
            self.daemon.start()
            self._wait_rounds(WARM_ROUNDS)
            first = self._snapshot_after_round(self._rounds_now() + 1)
            last = self._snapshot_after_round(first.rounds + self.rounds)
            self._fill(figures, first, last)
            self._responsiveness(figures)
            self._runs_list(figures)
        finally:
            self.daemon.stop()
            self._end_sleepers()
            shutil.rmtree(self.base, ignore_errors=True)
        return figures

    # -- set-up --------------------------------------------------------------------------

    def _far_side_runs(self) -> None:
        """Run directories and their live processes, as the remote user; registry rows."""
        account = pwd.getpwnam(GPU_USER)
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        now = int(time.time())
        rows = []
        for alias in self.aliases:
            self.world.hosts.add_alias(alias, self.world.hosts.plain_port)
        home = Path(account.pw_dir)
        for parent in reversed(self.base.relative_to(home).parents[:-1]):
            _make_dir(home / parent, account)
        _make_dir(self.base, account)
        for index in range(self.run_count):
            alias = self.aliases[index % self.host_count]
            run_id = f"{alias[-3:]}-r{index:04d}"
            workdir = self.base / alias
            run_dir = workdir / run_id
            _make_dir(workdir, account)
            _make_dir(run_dir, account)
            sleeper = subprocess.Popen(
                ["sleep", "3600"],
                cwd=run_dir,
                env={"PATH": "/usr/bin:/bin", "RTRAIN_RUN_ID": run_id},
                user=account.pw_uid,
                group=account.pw_gid,
                extra_groups=[],
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._sleepers.append(sleeper)
            _write(run_dir / "train.pid", f"{sleeper.pid}\n", account)
            # The mark prepare.sh leaves: without it a directory is no run of rtrain, its run
            # reads `missing` at the first poll and is never polled again (the 0.00 figures).
            _write(run_dir / ".rtrain-run", f"{run_id}\n", account)
            _write(
                run_dir / "meta.json",
                f'{{\n  "started_at": {now},\n  "boot_id": "{boot_id}"\n}}\n',
                account,
            )
            rows.append(
                RunInfo(
                    host=alias,
                    run_id=run_id,
                    state="running",
                    remote_dir=str(run_dir),
                    log_path=str(run_dir / "train.log"),
                    workdir=str(workdir),
                    command=["sleep", "3600"],
                    created_at=float(now),
                    started_at=float(now),
                    last_seen=float(now),
                )
            )
        self.daemon.registry_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        registry = Registry(self.daemon.registry_path)
        try:
            for alias in self.aliases:
                registry.set_host(alias, "exec", None)
            for row in rows:
                registry.upsert(row)
        finally:
            registry.close()

    def _end_sleepers(self) -> None:
        for sleeper in self._sleepers:
            if sleeper.poll() is None:
                sleeper.kill()
        for sleeper in self._sleepers:
            sleeper.wait()
        self._sleepers.clear()

    # -- measuring -----------------------------------------------------------------------

    def _counts(self) -> dict[str, Any]:
        try:
            counts: dict[str, Any] = json.loads(self.counts.read_text())
            return counts
        except (FileNotFoundError, json.JSONDecodeError):
            return {"polls": 0, "rounds": {"count": 0, "last_s": 0.0}, "commands": {}}

    def _rounds_now(self) -> int:
        return int(self._counts()["rounds"]["count"])

    def _wait_rounds(self, rounds: int) -> None:
        deadline = time.monotonic() + ROUND_TIMEOUT_S
        while self._rounds_now() < rounds:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not finish {rounds} poll rounds in time")
            time.sleep(0.02)

    def _snapshot_after_round(self, rounds: int) -> _Snapshot:
        self._wait_rounds(rounds)
        counts = self._counts()
        pid = self.daemon.pid
        stat = _stat_fields(pid)
        return _Snapshot(
            at=time.monotonic(),
            rounds=int(counts["rounds"]["count"]),
            polls=int(counts["polls"]),
            commands=sum(
                count for key, count in counts["commands"].items()
                if key.split(" ")[0] in self.aliases
            ),
            sessions=self.world.hosts.plain_log.read_text(errors="replace").count(
                "Starting session:"
            ),
            daemon_ticks=stat[11] + stat[12],
            children_ticks=stat[13] + stat[14],
            masters_ticks=sum(
                fields[11] + fields[12] for fields in _children_stats(pid, "ssh")
            ),
        )  # fmt: skip

    def _fill(self, figures: ScaleFigures, first: _Snapshot, last: _Snapshot) -> None:
        rounds = last.rounds - first.rounds
        wall = last.at - first.at
        per_host_round = rounds * self.host_count
        figures.window_s = wall
        figures.rounds = rounds
        figures.polls_per_host_round = (last.polls - first.polls) / per_host_round
        figures.commands_per_host_round = (last.commands - first.commands) / per_host_round
        figures.sshd_sessions_per_host_round = (last.sessions - first.sessions) / per_host_round
        figures.last_round_s = float(self._counts()["rounds"]["last_s"])

        def share(ticks: int) -> float:
            return 100.0 * ticks / CLK_TCK / wall

        figures.daemon_cpu_percent = share(last.daemon_ticks - first.daemon_ticks)
        figures.ssh_clients_cpu_percent = share(last.children_ticks - first.children_ticks)
        figures.masters_cpu_percent = share(last.masters_ticks - first.masters_ticks)
        status = _status_fields(self.daemon.pid)
        figures.rss_mb = status["VmRSS"] / 1024
        figures.peak_rss_mb = status["VmHWM"] / 1024

    def _responsiveness(self, figures: ScaleFigures) -> None:
        """`daemon/info` every 20 ms through one whole poll period: how long a client waits
        while the daemon refreshes every run (after the CPU window, which it would skew)."""
        client = self.daemon.client()
        try:
            target = self._rounds_now() + 2
            self._wait_rounds(target - 1)
            while self._rounds_now() < target:
                started = time.perf_counter()
                client.request("daemon/info", {})
                figures.info_during_poll_s.add(time.perf_counter() - started)
                time.sleep(0.02)
        finally:
            client.close()

    def _runs_list(self, figures: ScaleFigures) -> None:
        client = self.daemon.client()
        try:
            for rep in range(11):
                started = time.perf_counter()
                runs = client.request("runs/list", {}).runs
                elapsed = time.perf_counter() - started
                if len(runs) != self.run_count:
                    raise RuntimeError(f"runs/list gave {len(runs)} runs, not {self.run_count}")
                if rep:  # the first warms up
                    figures.runs_list_client_s.add(elapsed)
        finally:
            client.close()
        command = [*rtrain_command(), "runs", "--json"]
        run_checked(command, self.daemon.env)
        for _ in range(5):
            elapsed, out = run_checked(command, self.daemon.env)
            if out.count('"runId"') != self.run_count:
                raise RuntimeError("rtrain runs --json did not list every run")
            figures.runs_list_command_s.add(elapsed)


def _make_dir(path: Path, account: pwd.struct_passwd) -> None:
    path.mkdir(mode=0o700, exist_ok=True)
    os.chown(path, account.pw_uid, account.pw_gid)


def _write(path: Path, text: str, account: pwd.struct_passwd) -> None:
    path.write_text(text)
    os.chown(path, account.pw_uid, account.pw_gid)


def _stat_fields(pid: int) -> list[int]:
    """/proc/PID/stat after the command name, as numbers where they are numbers
    (index 11/12: utime/stime, 13/14: cutime/cstime, 1: parent pid)."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rfind(")") + 2 :].split()
    return [int(value) if value.lstrip("-").isdigit() else 0 for value in fields]


def _children_stats(pid: int, command: str) -> list[list[int]]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            comm = (entry / "comm").read_text().strip()
            fields = _stat_fields(int(entry.name))
        except (OSError, ValueError):
            continue
        if comm == command and fields[1] == pid:
            found.append(fields)
    return found


def _status_fields(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if rest.strip().endswith("kB"):
            values[key] = int(rest.split()[0])
    return values
