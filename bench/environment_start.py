"""How long a start with a requirements file takes, `rtrain start` to the trainer's end, on
the suite's plain test host through a warm daemon:

    python bench/environment_start.py [--runs 5]

- `--requirements` with its environment cached (every start after the first);
- the first such start (the build), once;
- the same start with `--setup 'pip install -r requirements.txt'` into a venv the far user
  keeps (pip finds everything installed and only checks);
- the same with `--setup` making a venv of the run's own and installing into it (what a
  start costs where nothing persists between runs).

The trainer imports the packages and exits. The runs of each kind alternate, so all see the
same load. Not a test: figures depend on the machine, its load and the package index.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.isolated_daemon import IsolatedDaemon  # noqa: E402
from bench.processes import run_checked  # noqa: E402
from bench.world import rtrain_command  # noqa: E402
from tests.hosts import GPU_USER  # noqa: E402
from tests.hosts.session import start_test_hosts  # noqa: E402

REQUIREMENTS = "termcolor\ntabulate\niniconfig\n"
TRAINER = "import termcolor, tabulate, iniconfig; print('step 1 | loss 1.0')"
BASE = "/usr/bin/python3"
KEPT_VENV = "~/.rtrain-bench-venv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtenv-", dir="/tmp") as base:
        root = Path(base)
        (root / "requirements.txt").write_text(REQUIREMENTS)
        (root / "cfg.yaml").write_text("steps: 1\n")
        with start_test_hosts(root / "hosts") as hosts:
            daemon = IsolatedDaemon(root / "d", hosts.config_path)
            daemon.start()
            workdir = f"~/.rtrain-bench-env-{os.getpid()}"
            count = 0

            def start(*words: str) -> float:
                nonlocal count
                count += 1
                argv = [*rtrain_command(), "start", "plain", "-c", str(root / "cfg.yaml")]
                argv += ["--run-id", f"env-{count}", "--workdir", workdir, "--gpus", "0"]
                argv += ["--python", BASE, *words]
                elapsed, _ = run_checked(argv, daemon.env, timeout=600)
                return elapsed

            code = root / "code"
            code.mkdir()
            (code / "requirements.txt").write_text(REQUIREMENTS)
            kinds = {
                "cached environment (--requirements)": [
                    "--requirements", str(root / "requirements.txt"),
                    "--", "{python}", "-c", TRAINER,
                ],
                "--setup pip install -r, into a kept venv": [
                    "--code", str(code), "--requirements", "",
                    "--setup", f"{KEPT_VENV}/bin/pip install -q -r requirements.txt",
                    "--", f"{KEPT_VENV}/bin/python", "-c", TRAINER,
                ],
                "--setup venv + pip install -r, per run": [
                    "--code", str(code), "--requirements", "",
                    "--setup", f"{BASE} -m venv --system-site-packages .venv && "
                    ".venv/bin/python -m pip install -q -r requirements.txt",
                    "--", ".venv/bin/python", "-c", TRAINER,
                ],
            }  # fmt: skip
            times: dict[str, list[float]] = {kind: [] for kind in kinds}
            try:
                made = hosts.run_as(
                    GPU_USER, [BASE, "-m", "venv", "--system-site-packages", KEPT_VENV[2:]]
                )
                assert made.returncode == 0, made
                first = start(*kinds["cached environment (--requirements)"])
                print(f"the first --requirements start (builds it): {first:.1f} s")
                start(*kinds["--setup pip install -r, into a kept venv"])  # its first install
                for _ in range(options.runs):
                    for kind, words in kinds.items():
                        times[kind].append(start(*words))
            finally:
                daemon.stop()
                hosts.run_as(GPU_USER, ["rm", "-rf", workdir[2:], KEPT_VENV[2:]])
    load = os.getloadavg()[0]
    print(f"{options.runs} starts each, load average {load:.1f} on {os.cpu_count()} CPUs:")
    for kind, measured in times.items():
        print(
            f"  {kind}: median {statistics.median(measured):.2f} s "
            f"(min {min(measured):.2f}, max {max(measured):.2f})"
        )


if __name__ == "__main__":
    main()
