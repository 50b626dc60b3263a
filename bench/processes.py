"""Timing a command the way a user experiences it: wall time from spawn to exit or first line."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Mapping, Sequence

TIMEOUT_S = 300.0


class CommandFailed(RuntimeError):
    pass


def run_checked(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = TIMEOUT_S
) -> tuple[float, str]:
    """Run to completion; (wall seconds, stdout). A non-zero exit is an error: a benchmark
    must never time a failure."""
    started = time.perf_counter()
    done = subprocess.run(
        list(argv),
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise CommandFailed(
            f"{' '.join(argv[:4])}... exited {done.returncode}: {done.stderr.strip()[-400:]}"
        )
    return elapsed, done.stdout


def time_to_first_line(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60.0
) -> float:
    """Seconds from spawn until the command printed its first whole line; then it is ended."""
    started = time.perf_counter()
    process = subprocess.Popen(
        list(argv),
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None
    received = b""
    try:
        deadline = started + timeout
        while b"\n" not in received:
            left = deadline - time.perf_counter()
            ready, _, _ = select.select([process.stdout], [], [], max(0.0, left))
            if not ready:
                raise CommandFailed(f"{' '.join(argv[:4])}... printed no line in {timeout:.0f} s")
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise CommandFailed(f"{' '.join(argv[:4])}... ended without a line: {err[-400:]}")
            received += chunk
        return time.perf_counter() - started
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
