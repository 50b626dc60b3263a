"""The Python API of sweeps (docs/sweeps.md): `rtrain.sweep(...)` starts one run per point
through a pool's placement and queue and returns a `RemoteSweep`, a handle by name whose
methods act on every run of the sweep, as `rtrain sweep status|stop|rm`, `rtrain wait
--sweep` and `rtrain compare --sweep` do.

    import rtrain

    lr = rtrain.sweep("@lab", ["{python}", "train.py", "--lr", "{lr}"],
                      grid={"lr": [1e-4, 3e-4]}, max_parallel=2)
    if lr.wait() != "completed":        # the worst state of its runs
        print(lr.status())
    best = lr.compare(sort="val_loss")[0]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .compare_rows import best_first, compare_row
from .daemon_client import DaemonClient
from .errors import InvalidHost
from .run_state_text import state_text
from .sweep_runs import (
    remove_sweep,
    start_sweep,
    stop_sweep,
    sweep_plan,
    sweep_runs,
    wait_sweep,
    worst_state,
)


def _connect() -> DaemonClient:
    return DaemonClient.connect(name="rtrain-python")


@dataclass(frozen=True)
class RemoteSweep:
    """A handle to a sweep by its name (its runs are NAME-1, NAME-2, ...); each method asks
    the daemon anew, so `RemoteSweep("lr")` reattaches from anywhere."""

    name: str

    def runs(self) -> list[tuple[str, str]]:
        """(host, run id) of each run, in order; the host is `@POOL` while it is queued."""
        with _connect() as client:
            return [(run.host, run.run_id) for run in sweep_runs(client, self.name)]

    def status(self) -> dict[str, str]:
        """Each run's state line (`running`, `queued (waiting for ...)`, `failed (...)`),
        by run id. Raises RunNotFound when no run has this sweep."""
        with _connect() as client:
            return {run.run_id: state_text(run) for run in sweep_runs(client, self.name)}

    def params(self) -> dict[str, dict[str, str]]:
        """Each run's parameters, by run id."""
        with _connect() as client:
            return {run.run_id: dict(run.params) for run in sweep_runs(client, self.name)}

    def stop(self) -> list[str]:
        """Stops every run not ended (a queued one leaves its queue); the ids stopped."""
        with _connect() as client:
            return stop_sweep(client, self.name)

    def remove(self) -> list[str]:
        """Removes every run (its far directory and record) once all have ended; raises
        RunActive before. The ids removed."""
        with _connect() as client:
            return remove_sweep(client, self.name)

    def wait(self, timeout: float | None = None) -> str:
        """Blocks until every run has ended; returns the worst state among them:
        `completed` only if every run completed, else `failed`, `lost` or `stopped` (in that
        order). Raises TimedOut after `timeout` seconds; the runs go on."""
        with _connect() as client:
            return worst_state(wait_sweep(client, self.name, timeout))

    def compare(self, sort: str | None = None) -> list[dict[str, Any]]:
        """One row per run (`runId`, `host`, `params`, `state`, `stateText`, `duration`,
        `cost`, `metrics`: each metric's `last` and `best`), best first by `sort` (a metric)
        when given; as `rtrain compare --sweep NAME --json`."""
        with _connect() as client:
            rows = [compare_row(client, run) for run in sweep_runs(client, self.name)]
        for row in rows:
            del row["series"]
        if sort is not None:
            best_first(rows, sort)
        return rows


def sweep(
    pool: str,
    command: Sequence[str],
    grid: Mapping[str, Sequence[object]] | None = None,
    *,
    ranges: Mapping[str, str] | None = None,
    samples: int | None = None,
    seed: int | None = None,
    max_parallel: int | None = None,
    name: str | None = None,
    config_path: str | Path | None = None,
    datasets: Sequence[str | Path] = (),
    code_dir: str | Path | None = None,
    gpus: int = 1,
    priority: int = 0,
) -> RemoteSweep:
    """Starts one run per point of `grid` (every combination of its values) or of `samples`
    random points (each grid parameter picked among its values, each of `ranges`,
    `"LOW:HIGH"`, `"LOW:HIGH:log"` or `"LOW:HIGH:int"`, drawn with `seed`), each `{NAME}` of
    `command` filled with the point's value, in `pool` (`"@lab"`), at most `max_parallel`
    placed at once; the rest wait in the pool's queue. Every run ships `config_path`,
    `datasets` and `code_dir` and asks for `gpus`. Raises InvalidCommand for a bad grid,
    value or command before anything starts, and RemoteError as a start would."""
    if not pool.startswith("@"):
        raise InvalidHost(f"a sweep runs in a pool: {pool!r} should be @POOL.", "invalid_host")
    plan = sweep_plan(command, grid or {}, ranges or {}, samples, seed, max_parallel, name)
    base: dict[str, Any] = {
        "host": pool,
        "config": str(Path(config_path).resolve()) if config_path is not None else None,
        "datasets": [str(Path(d).resolve()) for d in datasets] or None,
        "code": str(Path(code_dir).resolve()) if code_dir is not None else None,
        "gpus": gpus,
        "priority": priority or None,
    }
    with _connect() as client:
        start_sweep(client, plan, base)
    return RemoteSweep(plan.name)
