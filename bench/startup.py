"""How long the `rtrain` command takes to answer: start-up cost a user feels on every call.

    python bench/startup.py [--runs 20]

Times `rtrain --version`, `rtrain --help`, `rtrain status local RUN` and `rtrain tail local
RUN --no-follow` (against a warm daemon of its own, in temp XDG dirs, on a run it starts on
the embedded host `local`), each as a fresh process, and prints the median with the spread
(quartiles, min, max). The bare interpreter is the floor.
Not a test: figures depend on the machine and on its load.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

RUN_ID = "bench-startup"


def rtrain_executable() -> str:
    beside = Path(sysconfig.get_path("scripts")) / "rtrain"
    found = str(beside) if beside.is_file() else shutil.which("rtrain")
    if found is None:
        sys.exit("bench/startup.py: the `rtrain` console script is not installed (pip install .)")
    return found


def isolated_env(root: Path) -> dict[str, str]:
    """A daemon of our own: its socket, registry and log under `root`, never the user's."""
    env = dict(os.environ)
    for name in ("run", "state", "config"):
        (root / name).mkdir(mode=0o700)
    env.update(
        XDG_RUNTIME_DIR=str(root / "run"),
        XDG_STATE_HOME=str(root / "state"),
        XDG_CONFIG_HOME=str(root / "config"),
    )
    env.pop("RTRAIN_SOCKET", None)
    env.pop("RTRAIN_NO_SPAWN", None)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def timings(argv: list[str], env: dict[str, str], cwd: Path, runs: int) -> list[float]:
    seconds = []
    for _ in range(runs):
        began = time.perf_counter()
        done = run(argv, env, cwd)
        seconds.append(time.perf_counter() - began)
        if done.returncode != 0:
            sys.exit(f"bench/startup.py: {' '.join(argv)} failed:\n{done.stderr}")
    return seconds


def prepare_run(rtrain: str, env: dict[str, str], root: Path) -> None:
    """A finished run on `local`, so `status` has something real to report."""
    (root / "cfg.yaml").write_text("steps: 1\n")
    start = [rtrain, "start", "local", "-c", "cfg.yaml", "--run-id", RUN_ID]
    start += ["--workdir", str(root / "runs"), "--gpus", "0", "--no-follow"]
    start += ["--", "{python}", "-c", "print('step 1 | loss 1.0')"]
    done = run(start, env, root)
    if done.returncode != 0:
        sys.exit(f"bench/startup.py: could not start a run on local:\n{done.stderr}")
    deadline = time.monotonic() + 60
    while run([rtrain, "status", "local", RUN_ID], env, root).stdout.strip() != "completed":
        if time.monotonic() > deadline:
            sys.exit("bench/startup.py: the run on local did not complete within 60 s")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per command (default 20)")
    runs = parser.parse_args().runs
    rtrain = rtrain_executable()
    root = Path(tempfile.mkdtemp(prefix="rtb-", dir="/tmp"))  # short: a socket path is short
    env = isolated_env(root)
    try:
        prepare_run(rtrain, env, root)
        commands = [
            ("python -c pass (floor)", [sys.executable, "-c", "pass"]),
            ("rtrain --version", [rtrain, "--version"]),
            ("rtrain --help", [rtrain, "--help"]),
            (f"rtrain status local {RUN_ID}", [rtrain, "status", "local", RUN_ID]),
            (f"rtrain tail local {RUN_ID}", [rtrain, "tail", "local", RUN_ID, "--no-follow"]),
        ]
        print(f"{runs} runs each, wall time in ms ({os.cpu_count()} CPUs, load "
              f"{os.getloadavg()[0]:.1f})\n")  # fmt: skip
        print(f"{'command':<36} {'median':>7} {'q1':>7} {'q3':>7} {'min':>7} {'max':>7}")
        for title, argv in commands:
            run(argv, env, root)  # warm the page cache and the daemon
            ms = [s * 1000 for s in timings(argv, env, root, runs)]
            q1, _, q3 = statistics.quantiles(ms, n=4, method="inclusive")
            print(
                f"{title:<36} {statistics.median(ms):7.0f} {q1:7.0f} {q3:7.0f} "
                f"{min(ms):7.0f} {max(ms):7.0f}"
            )
    finally:
        run([rtrain, "daemon", "stop"], env, root)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
