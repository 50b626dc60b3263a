"""The commands for a run's later life: restart, rm, exec and shell."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .completion import complete_host, complete_run_id
from .input_checks import check
from .local_secrets import local_secrets
from .log_follow import follow_log
from .output import fail, friendly_errors, note, print_json
from .shared_options import HostArg, JsonOpt, RunArg, WorkdirOpt


@friendly_errors
def restart(
    host: str = HostArg,
    run_id: str = RunArg,
    command: list[str] = typer.Argument(
        None,
        metavar="[-- COMMAND...]",
        help="A new command for this attempt (placeholders as for start); with --append, "
        "words added to the last one (--init_from=resume).",
    ),
    append: bool = typer.Option(
        False,
        "--append",
        help="Run the last attempt's command with the words after -- added at its end.",
    ),
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Say what the new attempt would run; start nothing."
    ),
    secret: list[str] = typer.Option(
        [],
        "--secret",
        help="Pass this local environment variable to the trainer again (secrets are "
        "never stored).",
    ),
    code: Path | None = typer.Option(
        None,
        "--code",
        help="Ship this directory's files that differ from what the run holds into its "
        "run directory first (the fix; outputs and checkpoints stay).",
    ),
    follow: bool = typer.Option(
        True, "--follow/--no-follow", help="Stream the new attempt's log until it ends."
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Start an ended run's command again in its own directory (a trainer that
    checkpoints resumes), or a new one (`-- COMMAND...`), or the last one with words added
    (`--append -- WORDS...`); the log goes on in the same file. With --code DIR, the files
    of DIR that changed are shipped first."""
    check(host=host, run_id=run_id, workdir=workdir)
    words = list(command or [])
    if append and not words:
        fail("--append adds the words after `--` to the last command; give some.", 2)
    secrets = local_secrets(secret)
    call = requests.run_restart(
        host=host,
        run_id=run_id,
        workdir=workdir or None,
        secrets=secrets or None,
        command=None if append or not words else words,
        append=words if append else None,
        dry_run=dry_run or None,
        code=str(code.resolve()) if code is not None else None,
    )
    with DaemonClient.connect() as client:
        result = client.call(call)
        run = result.run
        attempt = result.attempt or (run.attempts[-1].number if run.attempts else 2)
        if json:
            print_json(result)
        elif result.dry_run:
            print(f"would restart {run.run_id} on {host} as attempt {attempt}:")
            if result.setup is not None:
                print(f"  setup:    {result.setup}")
            print(f"  command:  {shlex.join(result.command)}")
            print(f"  in:       {run.remote_dir}")
            if result.code_differs:
                print(f"  --code would ship: {_listed(result.code_differs)}")
            return
        else:
            if code is not None:
                said = _listed(result.code_shipped) if result.code_shipped else "nothing changed"
                print(f"shipped from {code}: {said}")
            elif result.code_differs:
                note(
                    f"note: the run holds older code than you have here ("
                    f"{_listed(result.code_differs)}); restart --code DIR ships it"
                )
            print(f"✓ restarted {run.run_id} on {host} (attempt {attempt})")
            print(f"  tail:  rtrain tail {host} {run.run_id}")
            print(f"  stop:  rtrain stop {host} {run.run_id}", flush=True)
        if follow and not result.dry_run:
            follow_log(client, host, run.run_id, workdir, result.log_offset, json)


@friendly_errors
def rm(
    host: str = HostArg,
    run_ids: list[str] = typer.Argument(
        ..., metavar="RUN...", help="Runs to remove.", autocompletion=complete_run_id
    ),
    workdir: str | None = WorkdirOpt,
    force: bool = typer.Option(
        False,
        "--force",
        help="Stop what still runs in the run directories (started there with exec), then remove.",
    ),
    json: bool = JsonOpt,
) -> None:
    """Remove runs that are not running: their directories on HOST and rtrain's record."""
    check(host=host, workdir=workdir)
    for run_id in run_ids:
        check(run_id=run_id)
    call = requests.run_remove(
        host=host, run_ids=list(run_ids), workdir=workdir or None, force=force
    )
    with DaemonClient.connect() as client:
        result = client.call(call)
    if json:
        print_json(result)
        return
    for removed in result.removed:
        if removed.had_dir:
            print(f"removed {removed.run_id} on {host} ({removed.remote_dir})")
        else:
            print(f"removed {removed.run_id} (nothing was left on {host})")


@friendly_errors
def exec_(
    host: str = HostArg,
    run_id: str = RunArg,
    command: list[str] = typer.Argument(
        ..., metavar="-- COMMAND...", help="The command (an argv) to run in the run directory."
    ),
    timeout: float = typer.Option(
        600.0, "--timeout", min=1, max=86400, help="Give up after this many seconds."
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Run COMMAND in the run's directory on HOST; exit with its exit code."""
    check(host=host, run_id=run_id, workdir=workdir)
    call = requests.run_exec(
        host=host,
        run_id=run_id,
        command=list(command),
        workdir=workdir or None,
        timeout=timeout,
    )
    with DaemonClient.connect() as client:
        result = client.call(call)
    if json:
        print_json(result)
    else:
        sys.stdout.write(result.stdout)
        sys.stdout.flush()
        sys.stderr.write(result.stderr)
        sys.stderr.flush()
    raise typer.Exit(result.exit_code)


@friendly_errors
def shell(
    host: str = typer.Argument(
        ...,
        metavar="HOST",
        help="SSH alias of the host (or `local`).",
        autocompletion=complete_host,
    ),
    run_id: str = RunArg,
    workdir: str | None = WorkdirOpt,
) -> None:
    """Open an interactive shell in the run's directory on HOST."""
    check(host=host, run_id=run_id, workdir=workdir)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(
            "rtrain shell needs a terminal; for one command use "
            f"rtrain exec {host} {run_id} -- COMMAND.",
            2,
        )
    call = requests.run_shell(host=host, run_id=run_id, workdir=workdir or None)
    with DaemonClient.connect() as client:
        how = client.call(call)
    if how.cwd:
        os.chdir(how.cwd)
    if how.type_in is None:
        note(f"shell in {run_id} on {host}; exit to come back")
        os.execvp(how.argv[0], how.argv)
    _console_shell(how.argv, how.type_in)


def _console_shell(argv: list[str], type_in: str) -> None:
    """A console gateway takes keystrokes only: relay this terminal to its PTY, typing
    `type_in` (the cd into the run) once the far shell first speaks."""
    import pty

    typed = False

    def from_far(fd: int) -> bytes:
        nonlocal typed
        data = os.read(fd, 4096)
        if not typed:
            typed = True
            os.write(fd, type_in.encode())
        return data

    status = pty.spawn(argv, from_far)
    raise typer.Exit(os.waitstatus_to_exitcode(status) if status else 0)


def _listed(paths: list[str], shown: int = 5) -> str:
    """`a.py, b.py` or `a.py, ... and 3 more`."""
    more = len(paths) - shown
    return ", ".join(paths[:shown]) + (f" and {more} more" if more > 0 else "")
