"""`rtrain wait HOST RUN`: block until a run ends (or reaches a state), for scripts and CI;
`rtrain wait --sweep NAME`: until every run of a sweep has ended.

Its exit status says how the wait ended (docs/cli.md has the table); this module's WaitExit
is that table.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.errors import RtrainError, TimedOut
from rtrain.client.run_state_text import state_text
from rtrain.client.sweep_runs import wait_sweep, worst_state
from rtrain.protocol import requests
from rtrain.protocol.durations import DurationError, parse_duration
from rtrain.protocol.run_states import RUN_STATES

from .completion import complete_host, complete_run_id
from .exit_codes import Exit
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import JsonOpt, WorkdirOpt
from .terminal_text import safe_for_terminal

if TYPE_CHECKING:
    from rtrain.protocol.requests import RunState


class WaitExit(IntEnum):
    COMPLETED = 0  # also: the --until state was reached
    FAILED = 1
    BAD_INPUT = 2
    STOPPED = 3
    LOST = 4
    TIMEOUT = 5
    REMOVED = 6
    ERROR = 7  # rtrain could not wait: no such run, no daemon, a host that refused us
    INTERRUPTED = 130


_BY_STATE = {
    "completed": WaitExit.COMPLETED,
    "failed": WaitExit.FAILED,
    "stopped": WaitExit.STOPPED,
    "lost": WaitExit.LOST,
}


def wait_exit(outcome: str, state: str) -> WaitExit:
    if outcome == "reached":
        return WaitExit.COMPLETED
    if outcome == "timeout":
        return WaitExit.TIMEOUT
    if outcome == "removed":
        return WaitExit.REMOVED
    return _BY_STATE.get(state, WaitExit.ERROR)


def wait(
    host: str | None = typer.Argument(
        None,
        metavar="HOST",
        help="SSH alias of the host (or `local`).",
        show_default=False,
        autocompletion=complete_host,
    ),
    run_id: str | None = typer.Argument(
        None,
        metavar="RUN",
        help="The run id `start` printed.",
        show_default=False,
        autocompletion=complete_run_id,
    ),
    sweep: str | None = typer.Option(
        None, "--sweep", metavar="NAME", help="Wait for every run of this sweep instead."
    ),
    until: str | None = typer.Option(
        None,
        "--until",
        metavar="STATE",
        help="Return once the run is in STATE (running, queued, ...), not only at its end.",
    ),
    timeout: str | None = typer.Option(
        None,
        "--timeout",
        metavar="DURATION",
        help="Give up after this long (seconds, or 90s, 30m, 6h); exit 5, the run goes on.",
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Wait until a run ends, print its state, and exit 0 only if it completed (1 failed,
    3 stopped, 4 lost, 5 timeout, 6 removed, 7 rtrain could not wait; see docs/cli.md).
    With --sweep NAME instead of HOST RUN: until every run of the sweep has ended; exit 0
    only if every one completed, else the exit of the worst (failed, lost, stopped).
    Ctrl-C stops waiting and leaves the run alone (exit 130)."""
    if sweep is not None:
        if host is not None or run_id is not None or until is not None or workdir:
            fail("--sweep NAME waits for a sweep: give no HOST, RUN, --until or --workdir.", 2)
        wait_for_sweep(sweep, timeout, json)
    if host is None or run_id is None:
        fail("wait takes HOST RUN (or --sweep NAME).", code=Exit.BAD_INPUT)
    try:
        result = _ask(host, run_id, until, timeout, workdir, json=json)
    except SystemExit as refused:
        # rtrain's own failure to wait (said on stderr already) is exit 7, whatever the
        # error was; bad input stays 2 and Ctrl-C 130.
        kept = (WaitExit.BAD_INPUT, WaitExit.INTERRUPTED)
        raise SystemExit(refused.code if refused.code in kept else WaitExit.ERROR) from None
    _report(result, host, run_id, json)


@friendly_errors
def _ask(
    host: str,
    run_id: str,
    until: str | None,
    timeout: str | None,
    workdir: str | None,
    json: bool,
) -> Any:
    check(host=host, run_id=run_id, workdir=workdir)
    if until is not None and until not in RUN_STATES:
        fail(f"--until takes one of {', '.join(RUN_STATES)}, not {until!r}.", code=Exit.BAD_INPUT)
    seconds = None if timeout is None else _seconds(timeout)
    state: RunState | None = until  # checked against RUN_STATES
    call = requests.run_wait(
        host=host, run_id=run_id, workdir=workdir or None, until=state, timeout=seconds
    )
    try:
        with DaemonClient.connect() as client:
            return client.call(call)
    except KeyboardInterrupt:
        # Closing the connection ends the daemon's wait; the run itself is not touched.
        note(f"\nstopped waiting; {run_id} on {host} is left as it is.")
        raise SystemExit(WaitExit.INTERRUPTED) from None


def wait_for_sweep(name: str, timeout: str | None, json: bool) -> NoReturn:
    """Until every run of sweep `name` has ended: each run's state line, and the exit of the
    worst (0 only if every run completed)."""
    check(run_id=name)
    seconds = None if timeout is None else _seconds(timeout)
    try:
        with DaemonClient.connect() as client:
            runs = wait_sweep(client, name, seconds)
    except KeyboardInterrupt:
        note(f"\nstopped waiting; sweep {name} goes on.")
        raise SystemExit(WaitExit.INTERRUPTED) from None
    except TimedOut as error:
        if json:
            print_json({"sweep": name, "outcome": "timeout", "exitCode": int(WaitExit.TIMEOUT)})
        else:
            note(f"gave up waiting; {error.message}")
        raise SystemExit(WaitExit.TIMEOUT) from None
    except RtrainError as error:
        fail(error.message, code=WaitExit.ERROR)
    code = _BY_STATE[worst_state(runs)]
    if json:
        print_json({"sweep": name, "outcome": "ended", "exitCode": int(code), "runs": runs})
    else:
        for run in runs:
            print(safe_for_terminal(f"{run.run_id}: {state_text(run)}"))
    raise SystemExit(code)


def _seconds(text: str) -> float:
    """--timeout: seconds (`3600`), or a duration (`90s`, `30m`, `1h30m`)."""
    if text.strip().isdigit():
        seconds = int(text)
        if 0 < seconds <= 365 * 86400:
            return seconds
        fail(f"--timeout {text} is not between 1 s and 365 days.", code=Exit.BAD_INPUT)
    try:
        return parse_duration(text, what="a timeout")
    except DurationError as error:
        fail(str(error), code=Exit.BAD_INPUT)


def _report(result: Any, host: str, run_id: str, json: bool) -> None:
    run = result.run
    code = wait_exit(result.outcome, run.state)
    if json:
        print_json({"outcome": result.outcome, "exitCode": int(code), "run": run})
    else:
        print(safe_for_terminal(state_text(run)))
        if result.outcome == "timeout":
            note(f"gave up waiting; {run_id} on {host} goes on.")
        elif result.outcome == "removed":
            note(f"{run_id} on {host} was removed while waiting.")
    raise SystemExit(code)
