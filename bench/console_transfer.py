"""Benchmark: moving a file over the console transport against scp on a plain host.

Starts the test suite's own sshds on loopback (tests/hosts): `console` is the console-only
gateway (no exec, no scp, no sftp), `plain` a normal sshd. Times, for one file of --size-mb
random bytes:

- console upload / fetch: ConsoleTransport.upload and .download, sha256-checked at both ends
  (the upload lands only when the far side's hash matches; the fetch is hashed here);
- scp upload / fetch: a fresh `scp` to and from `plain`, as a user types it.

Each is repeated --reps times; the median and the best are reported. Prints JSON on stdout
({"rows": [...]}, as bench/console_figures.py reads it) and a table on stderr.

    python bench/console_transfer.py [--size-mb 50] [--reps 3]

Needs what the test hosts need (root, sshd). Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable
from pathlib import Path

# Run as a file (python bench/console_transfer.py): the repository root holds `tests`.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rtrain.daemon.ssh.console_transport import ConsoleTransport  # noqa: E402
from tests.hosts import GPU_USER, TestHosts, start_test_hosts  # noqa: E402

MB = 1_000_000
RUN_ID = "console-bench"
# The mark of a run directory (lib/run_dir.sh's RUN_MARK): the run id, one line.
RUN_MARK = ".rtrain-run"


def write_payload(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        left = size
        while left:
            block = os.urandom(min(left, 1 << 20))
            out.write(block)
            digest.update(block)
            left -= len(block)
    return digest.hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class ConsoleRuns:
    """One ConsoleTransport, kept open across repetitions as the daemon keeps it."""

    def __init__(self, hosts: TestHosts, runtime: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.transport = ConsoleTransport("console", runtime, hosts.config_path)
        self.call(self.transport.connect())

    def call(self, work: Awaitable[object]) -> object:
        return self.loop.run_until_complete(work)

    def close(self) -> None:
        self.call(self.transport.close())
        self.loop.close()


def scp(hosts: TestHosts, source: str, target: str) -> None:
    subprocess.run(
        ["scp", "-q", "-F", str(hosts.config_path), "-o", "BatchMode=yes", source, target],
        check=True,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )


def row(direction: str, size: int, seconds: list[float]) -> dict[str, object]:
    median = statistics.median(seconds)
    return {
        "direction": direction,
        "MB": round(size / MB, 1),
        "MB/s": round(size / median / MB, 2),
        "best MB/s": round(size / min(seconds) / MB, 2),
        "median s": round(median, 2),
        "runs": len(seconds),
    }


def measure(hosts: TestHosts, work: Path, size: int, reps: int) -> list[dict[str, object]]:
    payload = work / "payload.bin"
    expected = write_payload(payload, size)
    top = f".rtrain-bench-console-{uuid.uuid4().hex[:8]}"
    # A fetch reads only from a run of rtrain: a run directory with the mark prepare.sh leaves.
    name = f"{top}/{RUN_ID}"
    far = hosts.home(GPU_USER) / name
    far.mkdir(mode=0o700, parents=True)
    (far / RUN_MARK).write_text(f"{RUN_ID}\n")
    for path in (far.parent, far, far / RUN_MARK):
        shutil.chown(path, GPU_USER, GPU_USER)
    back = work / "back.bin"
    times: dict[str, list[float]] = {
        "console upload": [],
        "console fetch": [],
        "scp upload (plain host)": [],
        "scp fetch (plain host)": [],
    }
    console = ConsoleRuns(hosts, work / "rt")
    try:
        for rep in range(reps):
            name_up = f"up-{rep}.bin"
            start = time.perf_counter()
            console.call(console.transport.upload(payload, f"~/{name}/{name_up}", expected))
            times["console upload"].append(time.perf_counter() - start)
            assert sha256_file(far / name_up) == expected

            start = time.perf_counter()
            got = console.call(console.transport.download(f"~/{name}", name_up, back))
            times["console fetch"].append(time.perf_counter() - start)
            assert got == expected and sha256_file(back) == expected
            back.unlink()
            (far / name_up).unlink()

            target = f"plain:{name}/scp-{rep}.bin"
            start = time.perf_counter()
            scp(hosts, str(payload), target)
            times["scp upload (plain host)"].append(time.perf_counter() - start)
            start = time.perf_counter()
            scp(hosts, target, str(back))
            times["scp fetch (plain host)"].append(time.perf_counter() - start)
            assert sha256_file(back) == expected
            back.unlink()
            (far / f"scp-{rep}.bin").unlink()
    finally:
        console.close()
        shutil.rmtree(far.parent, ignore_errors=True)
    return [row(direction, size, seconds) for direction, seconds in times.items()]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=float, default=50.0, help="file size, in MB (10^6)")
    parser.add_argument("--reps", type=int, default=3)
    options = parser.parse_args(argv)
    size = int(options.size_mb * MB)
    work = Path(tempfile.mkdtemp(prefix="rtcb-", dir="/tmp"))
    try:
        with start_test_hosts(work / "hosts") as hosts:
            rows = measure(hosts, work, size, options.reps)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    width = max(len(str(r["direction"])) for r in rows)
    for r in rows:
        print(
            f"{r['direction']:<{width}}  {r['MB/s']:>7} MB/s (best {r['best MB/s']}, "
            f"median {r['median s']} s over {r['runs']} run(s) of {r['MB']} MB)",
            file=sys.stderr,
        )
    print(json.dumps({"rows": rows}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
