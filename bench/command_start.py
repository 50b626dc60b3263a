"""Benchmark 4: how long the `rtrain` command takes, start-up included, as a user's shell
runs it: `--version`, `--help`, and `status` against a warm daemon, each a fresh process.

`status` is timed twice: on the embedded host `local` (no ssh: start-up and the daemon's
answer alone) and on the test host reached directly (one multiplexed ssh command more). The
bare interpreter (`python -c pass`) is the floor of any Python command.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench.processes import run_checked
from bench.sample import Sample
from bench.world import BenchWorld, rtrain_command

FLOOR = "python -c pass (floor)"
VERSION, HELP = "rtrain --version", "rtrain --help"
STATUS_LOCAL, STATUS_HOST = "rtrain status (host local)", "rtrain status (ssh host, direct)"
TRAINER = ["sh", "-c", "echo 'step 1: loss 1.0'; exec sleep 600"]


@dataclass
class CommandStart:
    seconds: dict[str, Sample] = field(default_factory=dict)


def run_command_start(world: BenchWorld, reps: int) -> CommandStart:
    assert world.daemon is not None
    daemon = world.daemon
    rtrain = rtrain_command()
    alias = world.link(None).alias
    local_workdir = Path(tempfile.mkdtemp(prefix="rtb-local-", dir="/tmp"))
    result = CommandStart()
    client = daemon.client()
    try:
        for host, run_id, workdir in (
            ("local", "startup-local", str(local_workdir)),
            (alias, "startup-host", world.workdir),
        ):
            client.request("run/start", {
                "host": host, "runId": run_id, "config": str(_config(world)), "gpus": 0,
                "workdir": workdir, "command": TRAINER,
            })  # fmt: skip
        commands = {
            FLOOR: [sys.executable, "-c", "pass"],
            VERSION: [*rtrain, "--version"],
            HELP: [*rtrain, "--help"],
            STATUS_LOCAL: [*rtrain, "status", "local", "startup-local"],
            STATUS_HOST: [*rtrain, "status", alias, "startup-host"],
        }
        for argv in commands.values():
            run_checked(argv, daemon.env)  # warm the page cache and the daemon
        names = list(commands)
        for rep in range(reps):
            shift = rep % len(names)
            for name in names[shift:] + names[:shift]:
                elapsed, _ = run_checked(commands[name], daemon.env)
                result.seconds.setdefault(name, Sample()).add(elapsed)
        result.seconds = {name: result.seconds[name] for name in names}
    finally:
        for host, run_id in (("local", "startup-local"), (alias, "startup-host")):
            try:
                client.request("run/stop", {"host": host, "runId": run_id, "force": True})
            except Exception as error:  # the run may never have started
                print(f"bench: stopping {run_id}: {error}", file=sys.stderr)
        client.close()
        shutil.rmtree(local_workdir, ignore_errors=True)
    return result


def _config(world: BenchWorld) -> Path:
    path = world.local_dir("startup-inputs") / "config.yaml"
    path.write_text("steps: 1\n")
    return path
