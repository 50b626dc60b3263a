"""The start of one torchrun run across two hosts against two single-host starts, side by
side, and how long a run lost on one node takes to come back with `--retry`.

Hosts: the suite's own sshd (tests/hosts) with two far users as the two "hosts" on loopback;
the daemon is the benchmark's own (bench/isolated_daemon.py), polling every 5 s as a user's
does by default. Each figure is the wall time of one `rtrain` command as a shell runs it.

    python -m bench.multinode_start [--reps 3]   (as root: the test hosts need it)
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.isolated_daemon import IsolatedDaemon
from bench.sample import Sample
from bench.world import rtrain_command
from tests.hosts.session import start_test_hosts
from tests.operations.processes import run_pids
from tests.torch_python import far_torch_python

HOSTS = ("plain", "nogpu")
USERS = {"plain": "rtrain-gpu", "nogpu": "rtrain-nogpu"}
WORKDIR = "~/.rtrain-bench-nodes"
TRAINER = """
import os, time
import torch.distributed as dist
dist.init_process_group("gloo")
step = int(open("checkpoint").read()) if os.path.exists("checkpoint") else 0
while True:
    step += 1
    print(f"step {step} | loss 1.0", flush=True)
    open("checkpoint", "w").write(str(step))
    time.sleep(0.2)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rtb-nodes-", dir="/tmp"))
    hosts = start_test_hosts(root / "hosts")
    daemon = IsolatedDaemon(root / "d", hosts.config_path, poll_interval_s=5.0)
    daemon.start()
    code = root / "code"
    code.mkdir()
    (code / "train.py").write_text(TRAINER)
    python = far_torch_python()
    try:
        figures = _measure(daemon, code, python, args.reps)
    finally:
        daemon.stop()
        for user in USERS.values():
            shutil.rmtree(Path(pwd.getpwnam(user).pw_dir) / ".rtrain-bench-nodes", True)
        hosts.close()
        shutil.rmtree(root, ignore_errors=True)
    for name, sample in figures.items():
        runs = ", ".join(f"{value:.2f}" for value in sample.values)
        print(f"{name:48s} median {sample.median:6.2f} s  ({runs})")


def _measure(daemon: IsolatedDaemon, code: Path, python: str, reps: int) -> dict[str, Sample]:
    figures: dict[str, Sample] = {}
    for rep in range(reps):
        run = f"two-{rep}"
        took = _start(daemon, ",".join(HOSTS), run, code, python, "--nodes", "2")
        figures.setdefault("start of a 2-node run (plain,nogpu)", Sample()).add(took)
        _stop(daemon, HOSTS[0], run)
        both = 0.0
        for host in HOSTS:
            both += _start(daemon, host, f"one-{host}-{rep}", code, python)
        figures.setdefault("two single-node starts, one after the other", Sample()).add(both)
        for host in HOSTS:
            _stop(daemon, host, f"one-{host}-{rep}")
    lost, back = _retry(daemon, code, python)
    figures["kill -9 on node 1 -> run lost (poll 5 s)"] = lost
    figures["kill -9 on node 1 -> attempt 2 running"] = back
    return figures


def _rtrain(daemon: IsolatedDaemon, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*rtrain_command(), *args], env=daemon.env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"rtrain {' '.join(args)}: {done.stderr or done.stdout}")
    return done


def _start(
    daemon: IsolatedDaemon, host: str, run: str, code: Path, python: str, *extra: str
) -> float:
    began = time.monotonic()
    _rtrain(
        daemon, "start", host, "--run-id", run, "--workdir", WORKDIR, "--gpus", "1",
        "--python", python, "--code", str(code), "--no-follow", *extra,
        "--", "{torchrun}", "train.py",
    )  # fmt: skip
    return time.monotonic() - began


def _stop(daemon: IsolatedDaemon, host: str, run: str) -> None:
    _rtrain(daemon, "stop", host, run, "--force", "--grace", "5")


def _retry(daemon: IsolatedDaemon, code: Path, python: str) -> tuple[Sample, Sample]:
    run = "retried"
    _start(daemon, ",".join(HOSTS), run, code, python, "--nodes", "2", "--retry", "1")
    _wait(daemon, run, lambda r: r["state"] == "running" and "step" in _log(run))
    uid = pwd.getpwnam(USERS["nogpu"]).pw_uid
    killed = time.monotonic()
    while pids := [p for p in run_pids(run) if os.stat(f"/proc/{p}").st_uid == uid]:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    lost, back = Sample(), Sample()
    _wait(daemon, run, lambda r: r["state"] == "lost" or len(r.get("attempts", [])) > 1)
    lost.add(time.monotonic() - killed)
    _wait(daemon, run, lambda r: len(r.get("attempts", [])) == 2 and r["state"] == "running")
    back.add(time.monotonic() - killed)
    _stop(daemon, HOSTS[0], run)
    return lost, back


def _log(run: str) -> str:
    home = Path(pwd.getpwnam(USERS["plain"]).pw_dir)
    log = home / ".rtrain-bench-nodes" / run / "train.log"
    return log.read_text(errors="replace") if log.exists() else ""


def _wait(daemon: IsolatedDaemon, run: str, ok: Callable[[dict[str, Any]], bool]) -> None:
    deadline = time.monotonic() + 120
    while True:
        found = json.loads(_rtrain(daemon, "status", HOSTS[0], run, "--json").stdout)
        if ok(found):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run}: never as expected: {found}")
        time.sleep(0.1)


if __name__ == "__main__":
    main()
