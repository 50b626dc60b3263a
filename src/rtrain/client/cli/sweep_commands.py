"""`rtrain sweep @POOL --grid ... -- COMMAND`: one run per point of a grid (or of random
samples), each through the pool's placement and queue; `rtrain sweep status|stop|rm|wait
NAME` act on the sweep as one object (docs/sweeps.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import InvalidCommand
from rtrain.client.run_state_text import state_text
from rtrain.client.sweep_runs import (
    SweepPlan,
    remove_sweep,
    start_sweep,
    stop_sweep,
    sweep_plan,
    sweep_runs,
)
from rtrain.protocol import sweep_points
from rtrain.protocol.errors import RpcError

from .describe import table
from .exit_codes import Exit
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import JsonOpt

ACTIONS = ("status", "stop", "rm", "wait")


@friendly_errors
def sweep(
    target: str = typer.Argument(
        ..., metavar="@POOL | status | stop | rm | wait", help="The pool to sweep in, or an action."
    ),
    words: list[str] = typer.Argument(
        None, metavar="NAME | -- COMMAND...", help="The sweep (for an action), or the command."
    ),
    grid: list[str] = typer.Option(
        [], "--grid", metavar="NAME=V1,V2", help="A parameter and its values (repeatable)."
    ),
    ranges: list[str] = typer.Option(
        [],
        "--range",
        metavar="NAME=LOW:HIGH[:log|:int]",
        help="A parameter drawn at random (with --samples).",
    ),
    samples: int | None = typer.Option(
        None, "--samples", help="Random points instead of the whole grid."
    ),
    seed: int | None = typer.Option(None, "--seed", help="The random points' seed."),
    sweep_file: Path | None = typer.Option(
        None, "--file", "-f", help="A sweep file (TOML: name, grid, range, samples, command...)."
    ),
    max_parallel: int | None = typer.Option(
        None, "--max-parallel", min=1, max=4096, help="At most this many runs placed at once."
    ),
    name: str | None = typer.Option(None, "--name", help="The sweep's name (its runs' prefix)."),
    config: Path | None = typer.Option(None, "--config", "-c", help="Shipped as config.yaml."),
    dataset: list[Path] = typer.Option([], "--dataset", "-d", help="Shipped with every run."),
    code: Path | None = typer.Option(None, "--code", help="A directory shipped with every run."),
    gpus: int = typer.Option(1, "--gpus", min=0, max=4096, help="GPUs for each run."),
    priority: int = typer.Option(0, "--priority", min=-1000, max=1000, help="In the queue."),
    json: bool = JsonOpt,
) -> None:
    """Start one run per point of a grid (every combination of the --grid values) or of
    --samples random points, each `{NAME}` of the command filled with the point's value;
    the runs go through the pool's placement and queue, at most --max-parallel at once.
    `rtrain sweep status|stop|rm|wait NAME` act on every run of the sweep."""
    words = list(words or [])
    if target in ACTIONS:
        if len(words) != 1:
            fail(f"rtrain sweep {target} takes the sweep's NAME.", Exit.BAD_INPUT)
        {"status": _status, "stop": _stop, "rm": _remove, "wait": _wait}[target](words[0], json)
        return
    if not target.startswith("@"):
        fail(f"rtrain sweep takes @POOL or one of {', '.join(ACTIONS)}, not {target!r}.", 2)
    check(host=target)
    plan = _plan(sweep_file, grid, ranges, samples, seed, max_parallel, name, words)
    base: dict[str, Any] = {
        "host": target,
        "config": str(config.resolve()) if config is not None else None,
        "datasets": [str(p.resolve()) for p in dataset] or None,
        "code": str(code.resolve()) if code is not None else None,
        "gpus": gpus,
        "priority": priority or None,
    }

    def started(point: dict[str, str], result: Any) -> None:
        if json:
            return
        said = _params_text(point)
        if result.run.state == "queued" and result.run.host.startswith("@"):
            print(f"{result.run.run_id} ({said}): queued: {result.run.reason}", flush=True)
        else:
            print(f"{result.run.run_id} ({said}): {result.placement}", flush=True)

    with DaemonClient.connect() as client:
        results = start_sweep(client, plan, base, started)
    if json:
        print_json({"sweep": plan.name, "runs": [r.run for r in results]})
        return
    note(
        f"sweep {plan.name}: {len(results)} runs; `rtrain sweep status {plan.name}`, "
        f"`rtrain wait --sweep {plan.name}`"
    )


def _plan(
    sweep_file: Path | None,
    grid: list[str],
    ranges: list[str],
    samples: int | None,
    seed: int | None,
    max_parallel: int | None,
    name: str | None,
    command: list[str],
) -> SweepPlan:
    """The sweep as asked (options win over the file), judged whole before any request."""
    spec = _read_file(sweep_file) if sweep_file is not None else {}
    try:
        values: dict[str, list[str]] = dict(_file_grid(spec))
        values |= dict(sweep_points.parse_grid(text) for text in grid)
        drawn = {str(key): str(text) for key, text in spec.get("range", {}).items()}
        drawn |= dict(text.split("=", 1) for text in ranges if "=" in text)
        for text in ranges:
            sweep_points.parse_range(text)  # a malformed one is named as typed
    except RpcError as error:
        fail(error.message, Exit.BAD_INPUT)
    command = command or [str(word) for word in spec.get("command", [])]
    if not command:
        fail("a sweep needs a command after `--` (or `command` in its file).", Exit.BAD_INPUT)
    try:
        plan = sweep_plan(
            command,
            values,
            drawn,
            samples if samples is not None else spec.get("samples"),
            seed if seed is not None else spec.get("seed"),
            max_parallel or spec.get("max_parallel"),
            name or spec.get("name"),
        )
    except InvalidCommand as error:
        fail(error.message, Exit.BAD_INPUT)
    # Its runs are NAME-1, NAME-2, ...: the sweep's name must leave room for the number.
    check(run_id=f"{plan.name}-{len(plan.points)}")
    return plan


def _read_file(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(path.read_text())
    except OSError as error:
        fail(f"{path} cannot be read: {error.strerror or error}.", Exit.BAD_INPUT)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        fail(f"{path} is not valid TOML: {error}.", Exit.BAD_INPUT)


def _file_grid(spec: dict[str, Any]) -> list[tuple[str, list[str]]]:
    grid = spec.get("grid", {})
    return [
        sweep_points.parse_grid(f"{key}={','.join(str(v) for v in values)}")
        for key, values in grid.items()
    ]


def _params_text(params: dict[str, str]) -> str:
    return " ".join(f"{key}={value}" for key, value in params.items())


def _status(name: str, json: bool) -> None:
    with DaemonClient.connect() as client:
        runs = sweep_runs(client, name)
    if json:
        print_json(runs)
        return
    rows = [[r.run_id, r.host, state_text(r), _params_text(dict(r.params))] for r in runs]
    print(table(["RUN", "HOST", "STATE", "PARAMS"], rows))
    counts: dict[str, int] = {}
    for run in runs:
        counts[run.state] = counts.get(run.state, 0) + 1
    note(f"sweep {name}: " + ", ".join(f"{n} {state}" for state, n in sorted(counts.items())))


def _stop(name: str, json: bool) -> None:
    with DaemonClient.connect() as client:
        stopped = stop_sweep(client, name)
    if json:
        print_json({"sweep": name, "stopped": stopped})
    else:
        note(f"sweep {name}: stopped {len(stopped)} run(s)")


def _remove(name: str, json: bool) -> None:
    with DaemonClient.connect() as client:
        removed = remove_sweep(client, name)
    if json:
        print_json({"sweep": name, "removed": removed})
    else:
        note(f"sweep {name}: removed {len(removed)} run(s) and their directories")


def _wait(name: str, json: bool) -> None:
    """`rtrain sweep wait NAME` is `rtrain wait --sweep NAME`."""
    from .wait_command import wait_for_sweep

    wait_for_sweep(name, None, json)
