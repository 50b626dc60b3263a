"""Benchmark 1: status, tail (to the first line), start (to the trainer running) and stop (to
confirmed), rtrain with a warm daemon against a fresh `ssh`/`scp` per step, on every link.

rtrain is timed two ways: the `rtrain` command (a new process per call, what a user types)
and a client on an open connection (what the VS Code extension or a Python loop does). The
floor is a bare `ssh host true` over an open ControlMaster: no tool can answer about a remote
run faster without knowing the answer already. The ways are interleaved, so a noisy moment
on the machine hits all of them alike.
"""

from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from bench.per_command_ssh import MuxMaster, PerCommandSsh
from bench.processes import CommandFailed, run_checked, time_to_first_line
from bench.sample import Sample
from bench.world import BenchWorld, Link, rtrain_command
from rtrain.client.daemon_client import DaemonClient
from rtrain.daemon.remote import script
from rtrain.protocol.requests import Call

OPERATIONS = ("status", "tail", "start", "stop")
CLI, CLIENT, PER_STEP, FLOOR = "rtrain command", "rtrain open client", "ssh per step", "floor"
# rtrain's own far-side script, run by hand on an open master: the open client minus this
# is what the daemon itself adds.
SCRIPT = "far-side script on a master"
WAYS = (CLI, CLIENT, SCRIPT, PER_STEP, FLOOR)
# The trainer: a line in the log, then nothing to do. Any real trainer adds the same to both.
TRAINER = "echo 'step 1: loss 1.0'; exec sleep 600"
DATASET_BYTES = 1024 * 1024


@dataclass
class LinkLatency:
    link: Link
    samples: dict[str, dict[str, Sample]] = field(default_factory=dict)

    def sample(self, operation: str, way: str) -> Sample:
        return self.samples.setdefault(operation, {}).setdefault(way, Sample())


class _FirstLine(Exception):
    pass


def _stop_at_first_log(method: str, params: Any) -> None:
    if method == "run/log" and params.text:
        raise _FirstLine


class LatencyBench:
    def __init__(self, world: BenchWorld, fast_reps: int, slow_reps: int) -> None:
        assert world.daemon is not None
        self.world = world
        self.daemon = world.daemon
        self.fast_reps = fast_reps
        self.slow_reps = slow_reps
        inputs = world.local_dir("latency-inputs")
        self.config = inputs / "config.yaml"
        self.config.write_text("steps: 10\nlr: 0.01\n")
        self.dataset = inputs / "dataset.bin"
        self.dataset.write_bytes(os.urandom(DATASET_BYTES))
        self.rtrain = rtrain_command()

    def run(self, links: list[Link]) -> list[LinkLatency]:
        return [self._one_link(index, link) for index, link in enumerate(links)]

    def _one_link(self, index: int, link: Link) -> LinkLatency:
        result = LinkLatency(link)
        ssh = PerCommandSsh(self.world.ssh_config, link.alias, self.world.tag)
        control = self.world.local_dir("cm") / str(index)
        master = MuxMaster(self.world.ssh_config, link.alias, control)
        client = self.daemon.client()
        try:
            # Warm: the daemon's ControlMaster for this alias is up before anything is timed.
            client.request("host/preflight", {"host": link.alias, "gpus": 0})
            subject = f"subject-{index}"
            client.request("run/start", self._start_params(link.alias, subject))
            run_dir = f"{self.world.workdir_abs}/{subject}"
            self._wait_for_log(client, link.alias, subject)
            self._status(result, client, ssh, master, link.alias, subject, run_dir)
            self._tail(result, ssh, master, link.alias, subject, run_dir)
            self._start_stop(result, client, ssh, index, link.alias)
            client.request("run/stop", {"host": link.alias, "runId": subject, "grace": 5})
        finally:
            client.close()
            master.close()
        return result

    # -- status ------------------------------------------------------------------------

    def _status(
        self,
        result: LinkLatency,
        client: DaemonClient,
        ssh: PerCommandSsh,
        master: MuxMaster,
        alias: str,
        run_id: str,
        run_dir: str,
    ) -> None:
        cli = [*self.rtrain, "status", alias, run_id]
        params = {"host": alias, "runId": run_id}

        def by_cli() -> float:
            elapsed, out = run_checked(cli, self.daemon.env)
            if "running" not in out:
                raise CommandFailed(f"rtrain status said {out.strip()!r}, not running")
            return elapsed

        def by_client() -> float:
            started = time.perf_counter()
            run = client.request("run/status", params).run
            elapsed = time.perf_counter() - started
            if run.state != "running":
                raise CommandFailed(f"run/status said {run.state}, not running")
            return elapsed

        def by_ssh() -> float:
            elapsed, out = run_checked(ssh.status(run_dir))
            if out.strip() != "running":
                raise CommandFailed(f"the status command said {out.strip()!r}, not running")
            return elapsed

        def floor() -> float:
            return run_checked(master.true())[0]

        by_script = _far_side_script(master, "status", [self.world.workdir_abs, run_id])
        ways = {CLI: by_cli, CLIENT: by_client, SCRIPT: by_script, PER_STEP: by_ssh, FLOOR: floor}
        self._interleave(result, "status", ways, self.fast_reps)

    # -- tail --------------------------------------------------------------------------

    def _tail(
        self,
        result: LinkLatency,
        ssh: PerCommandSsh,
        master: MuxMaster,
        alias: str,
        run_id: str,
        run_dir: str,
    ) -> None:
        cli = [*self.rtrain, "tail", alias, run_id]

        def by_cli() -> float:
            return time_to_first_line(cli, self.daemon.env)

        def by_client() -> float:
            client = self.daemon.client()
            try:
                started = time.perf_counter()
                try:
                    client.request(
                        "run/tail",
                        {"host": alias, "runId": run_id, "follow": True},
                        on_notification=_stop_at_first_log,
                    )
                except _FirstLine:
                    return time.perf_counter() - started
                raise CommandFailed("run/tail ended without a log line")
            finally:
                client.close()

        def by_ssh() -> float:
            return time_to_first_line(ssh.tail(run_dir))

        by_script = _far_side_script(master, "read_log", [run_dir, run_id, "0", "1048576", "-"])
        ways = {CLI: by_cli, CLIENT: by_client, SCRIPT: by_script, PER_STEP: by_ssh}
        self._interleave(result, "tail", ways, self.fast_reps)

    # -- start and stop ----------------------------------------------------------------

    def _start_stop(
        self, result: LinkLatency, client: DaemonClient, ssh: PerCommandSsh, index: int, alias: str
    ) -> None:
        for rep in range(self.slow_reps + 1):
            self._start_stop_round(result, rep, client, ssh, f"{index}-{rep}", alias)

    def _start_stop_round(
        self,
        result: LinkLatency,
        rep: int,
        client: DaemonClient,
        ssh: PerCommandSsh,
        tag: str,
        alias: str,
    ) -> None:
        """Start a run each way, then stop each. Round 0 warms up and is not recorded."""
        cli_run, client_run = f"cli-{tag}", f"api-{tag}"
        ssh_dir = f"{self.world.workdir_abs}/ssh-{tag}"
        cli_start = [
            *self.rtrain, "start", alias, "-c", str(self.config), "-d", str(self.dataset),
            "--gpus", "0", "--no-follow", "--run-id", cli_run, "--workdir", self.world.workdir,
            "--", "sh", "-c", TRAINER,
        ]  # fmt: skip
        starts = {
            CLI: lambda: run_checked(cli_start, self.daemon.env)[0],
            CLIENT: lambda: self._timed_request(
                client, "run/start", self._start_params(alias, client_run)
            ),
            PER_STEP: lambda: self._start_by_hand(ssh, ssh_dir),
        }
        for way, start in _rotated(starts, rep):
            elapsed = start()
            if rep:
                result.sample("start", way).add(elapsed)
        ssh_pid = int(run_checked(ssh.ssh(f"cat {ssh_dir}/train.pid"))[1].strip())
        cli_stop = [*self.rtrain, "stop", alias, cli_run]
        stops = {
            CLI: lambda: run_checked(cli_stop, self.daemon.env)[0],
            CLIENT: lambda: self._timed_request(
                client, "run/stop", {"host": alias, "runId": client_run}
            ),
            PER_STEP: lambda: run_checked(ssh.stop(ssh_pid))[0],
        }
        for way, stop in _rotated(stops, rep):
            elapsed = stop()
            if rep:
                result.sample("stop", way).add(elapsed)

    def _start_by_hand(self, ssh: PerCommandSsh, run_dir: str) -> float:
        started = time.perf_counter()
        run_checked(ssh.make_dir(run_dir))
        run_checked(ssh.scp_to(self.config, f"{run_dir}/config.yaml"))
        run_checked(ssh.scp_to(self.dataset, f"{run_dir}/{self.dataset.name}"))
        out = run_checked(ssh.launch(run_dir, TRAINER))[1]
        elapsed = time.perf_counter() - started
        if not out.strip().isdigit():
            raise CommandFailed(f"the launch printed {out!r}, not a pid")
        return elapsed

    # -- shared ------------------------------------------------------------------------

    def _start_params(self, alias: str, run_id: str) -> dict[str, Any]:
        return {
            "host": alias,
            "runId": run_id,
            "config": str(self.config),
            "dataset": str(self.dataset),
            "gpus": 0,
            "workdir": self.world.workdir,
            "command": ["sh", "-c", TRAINER],
        }

    @staticmethod
    def _timed_request(client: DaemonClient, method: str, params: dict[str, Any]) -> float:
        started = time.perf_counter()
        client.call(Call(method, params))  # any method: the wire's own call
        return time.perf_counter() - started

    def _wait_for_log(self, client: DaemonClient, alias: str, run_id: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            result = client.request("run/tail", {"host": alias, "runId": run_id, "follow": False})
            if result.offset > 0:
                return
            time.sleep(0.05)
        raise CommandFailed(f"{run_id} wrote no log line within 30 s")

    def _interleave(
        self, result: LinkLatency, operation: str, ways: dict[str, Any], reps: int
    ) -> None:
        for measure in ways.values():
            measure()  # one untimed round: caches, the interpreter's own start-up files
        for rep in range(reps):
            for way, measure in _rotated(ways, rep):
                result.sample(operation, way).add(measure())


def _far_side_script(master: MuxMaster, name: str, args: list[str]) -> Any:
    """Time rtrain's far-side script `name` run as the exec transport runs it, by hand."""
    argv = master.true()[:-1] + [shlex.join(["sh", "-c", script(name), "rtrain", *args])]

    def measure() -> float:
        elapsed, out = run_checked(argv)
        if not out:
            raise CommandFailed(f"the {name} script printed nothing")
        return elapsed

    return measure


def _rotated(ways: dict[str, Any], rep: int) -> list[tuple[str, Any]]:
    """The ways in an order that shifts every repetition: none is always first or last."""
    items = list(ways.items())
    shift = rep % len(items)
    return items[shift:] + items[:shift]
