"""Pools and sweeps: a 12-run sweep across three hosts against the same 12 runs started one
by one on one host (throughput), and the time from `rtrain start @pool` to a running run.

Hosts: the three pool hosts of the test suite (tests/hosts/pool_hosts.py: box1 1 GPU,
box2 2 GPUs with one busy with another process, box3 2 GPUs: 4 GPUs free in all), on
loopback; the daemon is the benchmark's own (bench/isolated_daemon.py), polling every
second. Each run takes one GPU and trains for RUN_S seconds. Figures are wall times of
`rtrain` commands as a shell runs them.

    python -m bench.pool_sweep [--reps 3]   (as root: the test hosts need it)
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench.isolated_daemon import IsolatedDaemon
from bench.sample import Sample
from bench.world import rtrain_command
from tests.hosts.pool_hosts import POOL_GPUS, PoolHosts
from tests.hosts.session import start_test_hosts

RUN_S = 3.0
RUNS = 12
WORKDIR = "~/.rtrain-bench-pools"
TRAINER = f"import time; time.sleep({RUN_S}); print('lr={{lr}} done', flush=True)"
CONFIG = "\n".join(
    [f'[hosts.{alias}]\nworkdir = "{WORKDIR}"\n' for alias in POOL_GPUS]
    + ['[pools.lab]\nhosts = ["box1", "box2", "box3"]\n']
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rtb-pools-", dir="/tmp"))
    hosts = start_test_hosts(root / "hosts")
    pool = PoolHosts(hosts)
    pool.start()
    daemon = IsolatedDaemon(root / "d", hosts.config_path, poll_interval_s=1.0)
    (daemon.config / "rtrain").mkdir(parents=True, exist_ok=True)
    (daemon.config / "rtrain" / "config.toml").write_text(CONFIG)
    daemon.start()
    try:
        figures = _measure(daemon, root, args.reps)
    finally:
        daemon.stop()
        for alias in POOL_GPUS:
            shutil.rmtree(pool.home(alias) / ".rtrain-bench-pools", ignore_errors=True)
        pool.close()
        hosts.close()
        shutil.rmtree(root, ignore_errors=True)
    for name, sample in figures.items():
        runs = ", ".join(f"{value:.2f}" for value in sample.values)
        print(f"{name:52s} median {sample.median:6.2f} s  ({runs})")


def _measure(daemon: IsolatedDaemon, root: Path, reps: int) -> dict[str, Sample]:
    figures: dict[str, Sample] = {}
    values = ",".join(str(i) for i in range(1, RUNS + 1))
    for rep in range(reps):
        began = time.monotonic()
        _rtrain(
            daemon, root, "sweep", "@lab", "--name", f"bench{rep}", "--grid", f"lr={values}",
            "--", "{python}", "-c", TRAINER,
        )  # fmt: skip
        _rtrain(daemon, root, "wait", "--sweep", f"bench{rep}")
        figures.setdefault(f"{RUNS}-run sweep over 3 hosts (4 GPUs), all done", Sample()).add(
            time.monotonic() - began
        )
        began = time.monotonic()
        for index in range(1, RUNS + 1):
            run = f"one{rep}-{index}"
            command = TRAINER.replace("{lr}", str(index))
            _rtrain(daemon, root, "start", "box3", "--run-id", run, "--gpus", "1",
                    "--no-follow", "--", "{python}", "-c", command)  # fmt: skip
            _rtrain(daemon, root, "wait", "box3", run)
        figures.setdefault(f"the same {RUNS} runs one by one on box3, all done", Sample()).add(
            time.monotonic() - began
        )
        began = time.monotonic()
        run = f"placed{rep}"
        _rtrain(daemon, root, "start", "@lab", "--run-id", run, "--gpus", "1", "--no-follow",
                "--", "{python}", "-c", "import time; time.sleep(30)")  # fmt: skip
        where = _host_of(daemon, root, run)
        _rtrain(daemon, root, "wait", where, run, "--until", "running")
        figures.setdefault("rtrain start @lab -> running", Sample()).add(time.monotonic() - began)
        _rtrain(daemon, root, "stop", where, run, "--force")
    return figures


def _host_of(daemon: IsolatedDaemon, root: Path, run: str) -> str:
    found = json.loads(_rtrain(daemon, root, "status", "@lab", run, "--json").stdout)
    host: str = found["host"]
    return host


def _rtrain(daemon: IsolatedDaemon, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*rtrain_command(), *args],
        env=daemon.env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"rtrain {' '.join(args)}: {done.stderr or done.stdout}")
    return done


if __name__ == "__main__":
    main()
