"""How long `host/preflight` takes on the suite's plain test host, through a warm daemon.

    python bench/preflight_time.py [--runs 15] [--baseline-python PYTHON]

Starts the test hosts and a daemon of its own (temp XDG dirs), warms the ControlMaster with
one preflight, then times N plain preflights (`gpus=1`, the defaults a user types) and prints
the median with the quartiles, min and max. With --baseline-python, a second daemon runs
under that interpreter (an install of another rtrain version) and the two are timed in turn,
so both see the same load. A plain preflight is the number that must stay
about the same when preflight learns more; the optional checks cost only when asked for.
Not a test: figures depend on the machine and on its load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.isolated_daemon import IsolatedDaemon  # noqa: E402
from tests.hosts.session import start_test_hosts  # noqa: E402


def _report(label: str, times: list[float]) -> None:
    q1, median, q3 = statistics.quantiles(times, n=4)
    print(
        f"{label}: host/preflight on plain, {len(times)} runs: median {median * 1000:.0f} ms "
        f"(quartiles {q1 * 1000:.0f}-{q3 * 1000:.0f} ms, "
        f"min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline-python", default=None)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtpf-", dir="/tmp") as base:
        root = Path(base)
        with start_test_hosts(root / "hosts") as hosts:
            daemons = {"this": IsolatedDaemon(root / "d", hosts.config_path)}
            if options.baseline_python:
                version = subprocess.run(
                    [
                        options.baseline_python,
                        "-c",
                        "import rtrain.protocol.version as v; print(v.__file__)",
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
                print(f"baseline: {options.baseline_python} ({version})")
                baseline = IsolatedDaemon(root / "b", hosts.config_path)
                baseline.python = options.baseline_python
                daemons["baseline"] = baseline
            times: dict[str, list[float]] = {label: [] for label in daemons}
            try:
                for daemon in daemons.values():
                    daemon.start()
                clients = {label: daemon.client() for label, daemon in daemons.items()}
                params = {"host": "plain", "workdir": f"~/.rtrain-bench-{os.getpid()}"}
                for client in clients.values():
                    client.request("host/preflight", params)
                for _ in range(options.runs):
                    for label, client in clients.items():
                        began = time.perf_counter()
                        client.request("host/preflight", params)
                        times[label].append(time.perf_counter() - began)
                for client in clients.values():
                    client.close()
            finally:
                for daemon in daemons.values():
                    daemon.stop()
    for label, measured in times.items():
        _report(label, measured)


if __name__ == "__main__":
    main()
