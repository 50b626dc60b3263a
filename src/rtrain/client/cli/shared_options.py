"""The typer arguments and options that many commands share, so they read alike."""

from __future__ import annotations

import typer

from .completion import complete_host, complete_run_id

HostArg = typer.Argument(
    ..., metavar="HOST", help="SSH alias of the host (or `local`).", autocompletion=complete_host
)
RunArg = typer.Argument(
    ..., metavar="RUN", help="The run id `start` printed.", autocompletion=complete_run_id
)
JsonOpt = typer.Option(False, "--json", "-j", help="Print machine-readable JSON.")
WorkdirOpt = typer.Option(
    None, "--workdir", help="Remote directory of runs, if not the one recorded (default ~/.rtrain)."
)
NodeOpt = typer.Option(
    None, "--node", min=0, metavar="K", help="A run across hosts: node K (0: the first host)."
)
