"""The commands that keep an idle host from billing: guard and terminate (docs/guard.md)."""

from __future__ import annotations

import sys

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests
from rtrain.protocol.durations import DurationError, parse_duration

from .exit_codes import Exit
from .guard_view import guard_words
from .input_checks import check
from .output import fail, friendly_errors, note, print_json
from .shared_options import HostArg, JsonOpt
from .terminal_text import safe_for_terminal

HostWorkdirOpt = typer.Option(
    None, "--workdir", help="Remote work directory (default ~/.rtrain, or the host's)."
)


@friendly_errors
def guard(
    host: str = HostArg,
    idle: str | None = typer.Option(
        None,
        "--idle",
        metavar="DURATION",
        help="Arm: run the command once HOST has been idle this long (90s, 30m, 6h).",
    ),
    then: str | None = typer.Option(
        None,
        "--then",
        metavar="COMMAND",
        help="Arm: the shell command to run on HOST then (runpodctl stop pod $RUNPOD_POD_ID).",
    ),
    ignore_sessions: bool = typer.Option(
        False, "--ignore-sessions", help="Arm: open interactive ssh sessions do not count."
    ),
    stalled_idle: bool = typer.Option(
        False,
        "--stalled-idle",
        help="Arm: a stalled run (log still, GPUs idle) counts as idle (default: the host's "
        "stalled_idle).",
    ),
    off: bool = typer.Option(False, "--off", help="Disarm the guard."),
    workdir: str | None = HostWorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Show, arm or disarm HOST's guard: a process on HOST that runs a command (stop or
    remove the pod, shut down) once HOST has been idle long enough, even with this
    machine gone."""
    check(host=host, workdir=workdir)
    arming = idle is not None or then is not None or ignore_sessions or stalled_idle
    if off and arming:
        fail(
            "--off disarms the guard; it takes no --idle, --then, --ignore-sessions or "
            "--stalled-idle.",
            code=Exit.BAD_INPUT,
        )
    seconds = None
    if idle is not None:
        try:
            seconds = parse_duration(idle, what="an idle period")
        except DurationError as error:
            fail(str(error), code=Exit.BAD_INPUT)
    if then is not None and not then.strip():
        fail("--then needs a command to run on the host.", code=Exit.BAD_INPUT)
    if then is not None and "\0" in then:
        fail("--then holds a NUL character.", code=Exit.BAD_INPUT)
    call = requests.host_guard(
        host=host,
        action="off" if off else "arm" if arming else None,
        workdir=workdir,
        idle_seconds=seconds,
        command=then,
        ignore_sessions=ignore_sessions or None,
        stalled_idle=True if stalled_idle else None,
    )
    with DaemonClient.connect() as client:
        result = client.call(call)
    if json:
        print_json(result)
        return
    words = guard_words(result.guard)
    print(f"guard on {host}: {words[0]}")
    for line in words[1:]:
        print(f"  {line}")


@friendly_errors
def terminate(
    host: str = HostArg,
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask first."),
    force: bool = typer.Option(
        False, "--force", help="Even while a run runs or a transfer is in flight."
    ),
    workdir: str | None = HostWorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Run HOST's terminate command now (`terminate` in config.toml, else its guard's),
    after asking; refused while a run runs or a transfer is in flight, unless --force."""
    check(host=host, workdir=workdir)
    if not yes:
        if not sys.stdin.isatty():
            fail(
                f"rtrain terminate asks before it ends {host}, and there is no terminal to "
                "ask on; pass --yes.",
                code=Exit.BAD_INPUT,
            )
        if not typer.confirm(
            f"Run {host}'s terminate command now? It may end the host and what is on it",
            default=False,
            err=True,
        ):
            fail(f"{host} was not terminated.", code=Exit.FAILED)
    call = requests.host_terminate(host=host, workdir=workdir, force=force or None)
    with DaemonClient.connect() as client:
        result = client.call(call)
    if json:
        print_json(result)
        return
    for line in result.output:
        print(safe_for_terminal(line))
    command = f"`{safe_for_terminal(result.command)}`" if result.command else "the command"
    if result.outcome == "disconnected":
        note(
            f"{host}: the connection ended while {command} ran, as it does when a host "
            "goes away; check with its provider that it did."
        )
    elif result.outcome == "running":
        note(f"{host}: {command} still runs; its output goes to the guard's log there.")
    elif result.exit_code == 0:
        note(f"{host}: {command} ran (exit 0).")
    else:
        fail(f"{host}: {command} failed (exit {result.exit_code}).")
