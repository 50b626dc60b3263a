"""The `rtrain` command: sub-apps and commands are registered here."""

from __future__ import annotations

import os

import typer

from rtrain.protocol.version import RTRAIN_VERSION

from . import (
    daemon_commands,
    forward_commands,
    guard_commands,
    login_commands,
    protocol_commands,
    run_care_commands,
    run_commands,
    wait_command,
)

app = typer.Typer(
    name="rtrain",
    help="Train on a remote GPU host over SSH: preflight, start, tail, status, fetch, stop.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
run_commands.register(app)
run_care_commands.register(app)
guard_commands.register(app)
login_commands.register(app)
wait_command.register(app)
forward_commands.register(app)
app.add_typer(daemon_commands.app, name="daemon")
app.add_typer(protocol_commands.app, name="protocol")


def _version(value: bool) -> None:
    if value:
        print(f"rtrain {RTRAIN_VERSION}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
    no_spawn: bool = typer.Option(
        False, "--no-spawn", help="Never start the daemon; fail if none runs (RTRAIN_NO_SPAWN=1)."
    ),
) -> None:
    if no_spawn:
        os.environ["RTRAIN_NO_SPAWN"] = "1"


def run() -> None:
    # The same name in usage lines whether run as `rtrain` or `python -m rtrain`.
    app(prog_name="rtrain")
