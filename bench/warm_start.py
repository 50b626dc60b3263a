"""Benchmark: a start on a warm host (issue 34): the daemon's connection open, the inputs in
the host's cache from an earlier start, `run/start` to the answer that the run is running.

Per link (direct, and through the delay proxy), it counts the far calls one warm start makes
and the bytes of script text and stdin each sends (bench/counting_daemon.py wraps the exec
transport), and times the start. A far call that runs beside another (the transfer lease)
is counted but costs no round trip of its own.

    python -m bench.warm_start [--reps N]      # alone; run_all.py runs it as `warm`
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.isolated_daemon import IsolatedDaemon
from bench.sample import Sample
from bench.world import BenchWorld, Link

TRAINER = ["sh", "-c", "echo 'step 1: loss 1.0'; exec sleep 600"]
DATASET_BYTES = 4 << 20
# The monitor's own far calls, which may fall inside a start's time: not the start's.
MONITOR = frozenset({"status", "watch"})


@dataclass
class WarmStart:
    link: Link
    seconds: Sample = field(default_factory=Sample)
    # script -> (calls per start, bytes sent per call)
    calls: dict[str, tuple[float, int]] = field(default_factory=dict)

    @property
    def calls_per_start(self) -> float:
        return sum(count for count, _ in self.calls.values())


def run_warm_start(world: BenchWorld, links: list[Link], reps: int) -> list[WarmStart]:
    counts = world.local_dir("warm") / "counts.json"
    daemon = IsolatedDaemon(
        world.root / "warm-daemon",
        world.ssh_config,
        module="bench.counting_daemon",
        extra_env={"RTRAIN_BENCH_COUNTS": str(counts), "RTRAIN_BENCH_COUNT_EVERY_CALL": "1"},
    )
    inputs = world.local_dir("warm-inputs")
    (inputs / "config.yaml").write_text("steps: 10\n")
    (inputs / "dataset.bin").write_bytes(os.urandom(DATASET_BYTES))
    daemon.start()
    client = daemon.client()
    found: list[WarmStart] = []
    try:
        for link in links:
            found.append(_one_link(world, client, counts, inputs, link, reps))
    finally:
        client.close()
        daemon.stop()
    return found


def _one_link(
    world: BenchWorld, client: Any, counts: Path, inputs: Path, link: Link, reps: int
) -> WarmStart:
    result = WarmStart(link)
    tag = link.alias

    def start(run_id: str) -> float:
        began = time.perf_counter()
        answer = client.request("run/start", {
            "host": link.alias, "runId": run_id, "config": str(inputs / "config.yaml"),
            "dataset": str(inputs / "dataset.bin"), "gpus": 0, "workdir": world.workdir,
            "command": TRAINER,
        })  # fmt: skip
        elapsed = time.perf_counter() - began
        if answer.run.state != "running":
            raise RuntimeError(f"the start answered {answer.run.state}, not running")
        return elapsed

    def stop(run_id: str) -> None:
        client.request("run/stop", {"host": link.alias, "runId": run_id, "force": True})

    # Warm: the connection, the long-lived shells, the inputs in the host's cache.
    client.request("host/preflight", {"host": link.alias, "gpus": 0})
    start(f"warm-{tag}-0")
    stop(f"warm-{tag}-0")
    per_call: dict[str, list[int]] = {}
    totals: dict[str, int] = {}
    for rep in range(reps):
        run_id = f"warm-{tag}-{rep + 1}"
        before = _read(counts)
        began = time.time()
        result.seconds.add(start(run_id))
        after = _read(counts)
        if os.environ.get("RTRAIN_BENCH_TIMELINE"):
            _print_timeline(counts, began)
        for key, (count, sent) in after.items():
            host, _, name = key.partition(" ")
            earlier_count, earlier_sent = before.get(key, (0, 0))
            if host == link.alias and name not in MONITOR and count > earlier_count:
                totals[name] = totals.get(name, 0) + count - earlier_count
                per_call.setdefault(name, []).append(
                    (sent - earlier_sent) // (count - earlier_count)
                )
        stop(run_id)
    result.calls = {
        name: (totals[name] / reps, int(statistics.median(per_call[name]))) for name in totals
    }
    return result


def _print_timeline(counts: Path, began: float) -> None:
    for key, start, end in json.loads(counts.read_text())["timeline"]:
        if end >= began:
            print(f"  {key}: {(start - began) * 1000:.0f} to {(end - began) * 1000:.0f} ms")


def _read(counts: Path) -> dict[str, tuple[int, int]]:
    if not counts.exists():
        return {}
    data = json.loads(counts.read_text())
    sent = data.get("sent", {})
    return {key: (count, sent.get(key, 0)) for key, count in data["commands"].items()}


def warm_table(found: list[WarmStart]) -> str:
    lines = [
        "| link | start to running, median (min-max) | far calls per start "
        "| calls (bytes sent each) |",
        "|---|---|---|---|",
    ]
    for entry in found:
        calls = ", ".join(
            f"{name} x{count:.3g} ({sent / 1024:.1f} KB)"
            for name, (count, sent) in entry.calls.items()
        )
        s = entry.seconds
        lines.append(
            f"| {entry.link.label} | {s.median * 1000:.0f} ms ({min(s.values) * 1000:.0f}-"
            f"{max(s.values) * 1000:.0f}) | {entry.calls_per_start:.3g} | {calls} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rtb-", dir="/tmp"))
    world = BenchWorld(root, [args.delay_ms])
    try:
        found = run_warm_start(world, world.links, args.reps)
    finally:
        world.close()
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(warm_table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
