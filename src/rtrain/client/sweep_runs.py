"""A sweep as one object, on the client's side (the CLI's `rtrain sweep`, `rtrain wait
--sweep` and the Python API share it): its points judged whole before any request, its runs
started through the pool, found, stopped, removed and waited for (docs/sweeps.md).

Errors are the client's own exceptions, each one sentence; nothing here prints."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rtrain.protocol import requests, sweep_points
from rtrain.protocol.errors import Kind, RpcError
from rtrain.protocol.run_states import group_ending, is_ended

from .daemon_client import DaemonClient
from .errors import InvalidCommand, RunActive, RunNotFound, TimedOut

# How often a wait asks the daemon how the sweep stands.
WAIT_POLL_S = 1.0
# A sweep's exit status (`rtrain wait`'s table): the worst of its runs' decides
# (run_states.group_ending).
EXIT_BY_STATE = {"completed": 0, "stopped": 3, "lost": 4, "failed": 1}


@dataclass(frozen=True)
class SweepPlan:
    """A sweep as asked: its name, its command with `{NAME}` placeholders, its points."""

    name: str
    command: list[str]
    points: list[dict[str, str]]
    max_parallel: int | None


def sweep_plan(
    command: Sequence[str],
    grid: Mapping[str, Sequence[object]],
    ranges: Mapping[str, str],
    samples: int | None,
    seed: int | None,
    max_parallel: int | None,
    name: str | None,
) -> SweepPlan:
    """The points of a grid (every combination) or of `samples` random picks; raises
    InvalidCommand with the first mistake."""
    try:
        values = dict(
            sweep_points.parse_grid(f"{key}={','.join(str(v) for v in vs)}")
            for key, vs in grid.items()
        )
        drawn = dict(sweep_points.parse_range(f"{key}={text}") for key, text in ranges.items())
        points = sweep_points.points(values, drawn, samples, seed)
    except RpcError as error:
        raise InvalidCommand(error.message, Kind.INVALID_COMMAND) from None
    if not command:
        raise InvalidCommand("a sweep needs a command.", Kind.INVALID_COMMAND)
    missing = sweep_points.unused(command, [*values, *drawn])
    if missing:
        raise InvalidCommand(
            f"the command never uses {', '.join('{' + m + '}' for m in missing)}: every run "
            "would be the same.",
            Kind.INVALID_COMMAND,
        )
    if max_parallel is not None and not 1 <= max_parallel <= 4096:
        raise InvalidCommand("max_parallel must be between 1 and 4096.", Kind.INVALID_COMMAND)
    return SweepPlan(name or f"sweep-{secrets.token_hex(3)}", list(command), points, max_parallel)


def start_sweep(
    client: DaemonClient,
    plan: SweepPlan,
    base: Mapping[str, Any],
    started: Callable[[dict[str, str], Any], None] = lambda point, result: None,
) -> list[Any]:
    """One `run/start` per point, `base` the options every run shares (its host the pool);
    `started` hears of each as it goes. The StartResults."""
    results = []
    for index, point in enumerate(plan.points, 1):
        call = requests.run_start(
            **base,
            run_id=f"{plan.name}-{index}",
            command=sweep_points.filled(plan.command, point),
            sweep={"name": plan.name, "params": point, "maxParallel": plan.max_parallel},
        )
        result = client.call(call)
        started(point, result)
        results.append(result)
    return results


def sweep_runs(client: DaemonClient, name: str) -> list[Any]:
    """The sweep's runs in their order (NAME-1, NAME-2, ...)."""
    runs = client.call(requests.runs_list(sweep=name)).runs
    if not runs:
        raise RunNotFound(
            f"no sweep {name!r}: `rtrain runs` lists the runs rtrain knows of.",
            Kind.RUN_NOT_FOUND,
        )
    return sorted(runs, key=lambda r: _index(r.run_id))


def _index(run_id: str) -> int:
    tail = run_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def stop_sweep(client: DaemonClient, name: str) -> list[str]:
    """Every run of the sweep not ended, stopped (the queued first, so none of them is placed
    while the others stop); their ids."""
    stopped = []
    for run in sorted(sweep_runs(client, name), key=lambda r: r.state != "queued"):
        if is_ended(run.state):
            continue
        where = run.pool if run.host.startswith("@") and run.pool else run.host
        client.call(requests.run_stop(host=where, run_id=run.run_id))
        stopped.append(run.run_id)
    return stopped


def remove_sweep(client: DaemonClient, name: str) -> list[str]:
    """Every run of an ended sweep, removed with its directory; raises RunActive while one
    has not ended."""
    runs = sweep_runs(client, name)
    live = [r.run_id for r in runs if not is_ended(r.state)]
    if live:
        raise RunActive(
            f"sweep {name} still has {len(live)} run(s) not ended ({', '.join(live[:3])}"
            f"{', ...' if len(live) > 3 else ''}); stop the sweep first "
            f"(`rtrain sweep stop {name}`).",
            Kind.RUN_ACTIVE,
        )
    by_host: dict[str, list[str]] = {}
    for run in runs:
        by_host.setdefault(run.host, []).append(run.run_id)
    removed = []
    for host, run_ids in by_host.items():
        removed += [
            r.run_id for r in client.call(requests.run_remove(host=host, run_ids=run_ids)).removed
        ]
    return removed


def wait_sweep(client: DaemonClient, name: str, timeout: float | None = None) -> list[Any]:
    """The sweep's runs once every one has ended; raises TimedOut after `timeout` s."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        runs = sweep_runs(client, name)
        if all(is_ended(run.state) for run in runs):
            return runs
        if deadline is not None and time.monotonic() >= deadline:
            left = sum(1 for run in runs if not is_ended(run.state))
            raise TimedOut(
                f"sweep {name} still has {left} run(s) not ended; it goes on.", Kind.TIMEOUT
            )
        time.sleep(WAIT_POLL_S)


def worst_state(runs: Sequence[Any]) -> str:
    """The state that decides a sweep's exit: the worst of its runs'."""
    return group_ending(run.state for run in runs)
