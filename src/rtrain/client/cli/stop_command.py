"""`rtrain stop`: end every process of a run."""

from __future__ import annotations

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.protocol import requests

from .input_checks import check
from .output import friendly_errors, print_json
from .shared_options import HostArg, JsonOpt, RunArg, WorkdirOpt


@friendly_errors
def stop(
    host: str = HostArg,
    run_id: str = RunArg,
    force: bool = typer.Option(False, "--force", help="SIGKILL what survives the grace."),
    grace: float | None = typer.Option(
        None,
        "--grace",
        min=0,
        max=3600,
        help="Seconds to wait after SIGTERM (default 10; 35 for a torchrun run).",
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Stop every process of a run and confirm they are gone."""
    check(host=host, run_id=run_id, workdir=workdir)
    call = requests.run_stop(
        host=host, run_id=run_id, workdir=workdir or None, force=force, grace=grace
    )
    with DaemonClient.connect() as client:
        result = client.call(call)
    if json:
        print_json(result)
    elif result.outcome == "stopped":
        print(f"stopped {run_id} on {host}")
    else:
        print(f"{run_id} was not running on {host}")
    if not json and result.retries_cancelled:
        left = result.retries_cancelled
        retries = "its retry left is" if left == 1 else f"its {left} retries left are"
        print(f"{retries} cancelled: the daemon will not start {run_id} again")
