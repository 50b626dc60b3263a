"""rtrain's benchmark suite in one command; writes docs/performance.md and docs/perf/*.png.

    python bench/run_all.py            # the full suite (under 10 minutes), writes the docs
    python bench/run_all.py --quick    # a smoke run; written to a temporary directory
    python bench/run_all.py --only latency,rpc --out /tmp/perf

Needs root (the test hosts create users and run sshd) and, for the bench only, pygls and
matplotlib (installed with pip when missing, unless --no-install). Contacts only 127.0.0.1.
Never part of the test run.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BENCHMARKS = ("latency", "transfer", "console", "rpc", "start", "warm", "scale", "files")
BENCH_PACKAGES = {"pygls": "pygls", "matplotlib": "matplotlib"}

FULL = {
    "delays_ms": [0.0, 25.0, 50.0],
    "fast_reps": 7,
    "slow_reps": 3,
    "transfer_mb": 100,
    "transfer_reps": 3,
    "rpc_seconds": 2.0,
    "rpc_rounds": 3,
    "start_reps": 15,
    "warm_reps": 7,
    # A warm start: on the direct link, and at +50 ms one way (issue 34's link).
    "warm_delays_ms": [None, 50.0],
    "scale_hosts": 20,
    "scale_runs": 1000,
    "scale_interval_s": 5.0,
    "scale_rounds": 3,
    "files": 3000,
    "files_reps": 2,
    "files_delays_ms": [None, 25.0],
    # Transfers are link-bound at +25 ms already and take long there: +0 and +50 bracket it.
    "transfer_delays_ms": [None, 0.0, 50.0],
}
QUICK = {
    **FULL,
    "delays_ms": [50.0],
    "transfer_delays_ms": [None, 50.0],
    "fast_reps": 2,
    "slow_reps": 1,
    "transfer_mb": 10,
    "transfer_reps": 1,
    "rpc_seconds": 0.5,
    "rpc_rounds": 1,
    "start_reps": 3,
    "warm_reps": 2,
    "scale_runs": 200,
    "scale_interval_s": 2.0,
    "scale_rounds": 2,
    "files": 300,
    "files_reps": 1,
    "files_delays_ms": [None, 50.0],
}


def ensure_bench_packages(install: bool) -> None:
    missing = [name for name in BENCH_PACKAGES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    wanted = [BENCH_PACKAGES[name] for name in missing]
    if not install:
        sys.exit(f"run_all.py: missing bench-only packages; pip install {' '.join(wanted)}")
    print(f"run_all.py: installing bench-only packages: {' '.join(wanted)}", flush=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *wanted], check=True)


def compile_bytecode() -> None:
    """An installed rtrain has its modules compiled (pip does it at install). A checkout run
    where PYTHONDONTWRITEBYTECODE is set would compile every module again at every command,
    and the start-up rows would time the compiler (nearly half of `rtrain status` in a
    profile here)."""
    import compileall

    compileall.compile_dir(REPO / "src", quiet=1)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="rtrain's benchmark suite")
    parser.add_argument("--quick", action="store_true", help="few repetitions: a smoke run")
    parser.add_argument(
        "--only", default=",".join(BENCHMARKS), help=f"comma-separated subset of {BENCHMARKS}"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where performance.md and perf/*.png go (default: docs/ for a full run of "
        "everything, else a new temporary directory)",
    )
    parser.add_argument("--no-install", action="store_true", help="never pip install")
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(args.only) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from tests.hosts.session import missing_requirements

    missing = missing_requirements()
    if missing:
        sys.exit("run_all.py needs: " + ", ".join(missing))
    ensure_bench_packages(not args.no_install)
    compile_bytecode()

    from bench.machine import describe_machine, load_average
    from bench.results import Results
    from bench.world import BenchWorld

    settings: dict[str, Any] = dict(QUICK if args.quick else FULL)
    complete = not args.quick and list(args.only) == list(BENCHMARKS)
    out = args.out or (REPO / "docs" if complete else Path(tempfile.mkdtemp(prefix="rtrain-perf-")))
    results = Results(quick=args.quick, machine=describe_machine(REPO), settings=settings)
    print(f"rtrain benchmark suite ({'quick' if args.quick else 'full'}); "
          f"load {results.machine['load']}; writing to {out}", flush=True)  # fmt: skip

    root = Path(tempfile.mkdtemp(prefix="rtb-", dir="/tmp"))  # short: socket paths are short
    world = BenchWorld(root, settings["delays_ms"])
    try:
        for name in args.only:
            _step(name, results, partial(_run_one, name, world, settings, results))
    finally:
        world.close()
    results.load_after = load_average()
    _write(results, out)
    return 1 if results.errors else 0


def _run_one(name: str, world: Any, settings: dict[str, Any], results: Any) -> None:
    from bench import report

    if name == "latency":
        from bench.operation_latency import LatencyBench

        latency = LatencyBench(world, settings["fast_reps"], settings["slow_reps"])
        results.latency = latency.run(world.links)
        print(report.latency_table(results.latency))
    elif name == "transfer":
        from bench.transfer import TransferBench

        size = int(settings["transfer_mb"] * 1_000_000)
        links = [world.link(delay) for delay in settings["transfer_delays_ms"]]
        results.transfer = TransferBench(world, size, settings["transfer_reps"]).run(links)
        print(report.transfer_table(results.transfer))
    elif name == "console":
        from bench.console_figures import console_figures

        results.console = console_figures(quick=results.quick)
        print(report.console_section(results.console, None))
    elif name == "rpc":
        from bench.rpc_core import run_rpc_bench

        results.rpc = run_rpc_bench(
            world.daemon.socket_path, settings["rpc_seconds"], settings["rpc_rounds"]
        )
        print(report.rpc_table(results.rpc))
    elif name == "start":
        from bench.command_start import run_command_start

        results.start = run_command_start(world, settings["start_reps"])
        print(report.start_table(results.start))
    elif name == "warm":
        from bench.warm_start import run_warm_start, warm_table

        links = [world.link(delay) for delay in settings["warm_delays_ms"]]
        results.warm = run_warm_start(world, links, settings["warm_reps"])
        print(warm_table(results.warm))
    elif name == "scale":
        from bench.scale import ScaleBench

        scale = ScaleBench(
            world,
            settings["scale_hosts"],
            settings["scale_runs"],
            settings["scale_interval_s"],
            settings["scale_rounds"],
        )
        results.scale = scale.run()
        print(report.scale_table(results.scale))
    elif name == "files":
        from bench.many_files import ManyFilesBench

        links = [world.link(delay) for delay in settings["files_delays_ms"]]
        bench = ManyFilesBench(world, settings["files"], settings["files_reps"])
        results.files = bench.run(links)
        print(report.files_table(results.files))


def _step(name: str, results: Any, body: Callable[[], None]) -> None:
    print(f"\n== {name} ==", flush=True)
    started = time.monotonic()
    try:
        body()
    except Exception as error:  # one failed benchmark must not lose the others' figures
        traceback.print_exc()
        results.errors[name] = f"{type(error).__name__}: {error}"
    finally:
        results.seconds[name] = time.monotonic() - started
        print(f"({name}: {results.seconds[name]:.0f} s)", flush=True)


def _write(results: Any, out: Path) -> None:
    from bench import plots, report
    from bench.commentary import commentary
    from bench.targets import verdicts

    images = out / "perf"
    images.mkdir(parents=True, exist_ok=True)
    made: dict[str, str] = {}
    drawers: dict[str, Callable[[Path], None]] = {
        "latency": lambda path: plots.latency_plot(results.latency, path),
        "throughput": lambda path: plots.throughput_plot(
            results.transfer, _console_points(results), path
        ),
        "rpc": lambda path: plots.rpc_plot(results.rpc, path),
    }
    needs = {"latency": results.latency, "throughput": results.transfer, "rpc": results.rpc}
    for key, draw in drawers.items():
        if needs[key]:
            draw(images / f"{key}.png")
            made[key] = f"perf/{key}.png"
    page = report.render(results, made, commentary(results))
    (out / "performance.md").write_text(page)
    print("\n" + report.verdict_table(verdicts(results)))
    print(f"\nwrote {out / 'performance.md'} and {len(made)} plot(s) in {images}")


def _console_points(results: Any) -> list[tuple[str, float]]:
    if results.console is None:
        return []
    return [
        (str(row.get("direction", "")), float(row["MB/s"]))
        for row in results.console.rows
        if "MB/s" in row
    ]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
