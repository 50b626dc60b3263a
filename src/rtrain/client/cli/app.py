"""The `rtrain` command: sub-apps and commands are registered here."""

from __future__ import annotations

import os

import typer

from rtrain.protocol.version import RTRAIN_VERSION

from . import daemon_commands, protocol_commands
from .compare_command import compare
from .envs_command import envs
from .fetch_command import fetch
from .forward_commands import forward, forwards
from .gc_command import gc
from .guard_commands import guard, terminate
from .hosts_command import hosts
from .kernel_command import kernel
from .login_commands import login, logout
from .pool_commands import pools
from .preflight_command import preflight
from .run_care_commands import exec_, restart, rm, shell
from .runs_command import runs
from .start_command import start
from .stop_command import stop
from .sweep_commands import sweep
from .tensorboard_command import tensorboard
from .usage import PlainUsage
from .wait_command import wait
from .watch_commands import metrics, status, tail

app = typer.Typer(
    name="rtrain",
    help="Train on a remote GPU host over SSH: preflight, start, tail, status, fetch, stop.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
# In this order in `rtrain --help`.
app.command(cls=PlainUsage)(preflight)
app.command(cls=PlainUsage, context_settings={"allow_extra_args": False})(start)
app.command(cls=PlainUsage)(tail)
app.command(cls=PlainUsage)(status)
app.command(cls=PlainUsage)(metrics)
app.command(cls=PlainUsage)(fetch)
app.command(cls=PlainUsage)(stop)
app.command(cls=PlainUsage)(gc)
app.command(cls=PlainUsage)(envs)
app.command(cls=PlainUsage)(runs)
app.command(cls=PlainUsage)(hosts)
app.command(cls=PlainUsage)(pools)
app.command(cls=PlainUsage)(sweep)
app.command(cls=PlainUsage)(compare)
app.command(
    cls=PlainUsage, context_settings={"allow_extra_args": False, "ignore_unknown_options": True}
)(restart)
app.command("rm", cls=PlainUsage)(rm)
app.command(
    "exec",
    cls=PlainUsage,
    context_settings={"allow_extra_args": False, "ignore_unknown_options": True},
)(exec_)
app.command(cls=PlainUsage)(shell)
app.command(cls=PlainUsage)(guard)
app.command(cls=PlainUsage)(terminate)
app.command(cls=PlainUsage)(login)
app.command(cls=PlainUsage)(logout)
app.command(cls=PlainUsage)(wait)
app.command(cls=PlainUsage)(forward)
app.command(cls=PlainUsage)(forwards)
app.command(cls=PlainUsage)(tensorboard)
app.command(cls=PlainUsage)(kernel)
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
