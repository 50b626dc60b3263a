"""The commands that look at a run without changing it: tail, status, metrics."""

from __future__ import annotations

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.run_state_text import state_text
from rtrain.protocol import requests

from .input_checks import check
from .log_follow import follow_log
from .metrics_view import (
    MetricsFollower,
    show_metrics,
)
from .output import fail, friendly_errors, note
from .shared_options import HostArg, JsonOpt, NodeOpt, RunArg, WorkdirOpt
from .status_view import show_status


@friendly_errors
def tail(
    host: str = HostArg,
    run_id: str = RunArg,
    offset: int = typer.Option(0, "--offset", min=0, help="Start at this byte of the log."),
    lines: int | None = typer.Option(
        None, "--lines", "-n", min=0, help="Start this many lines before the end of the log."
    ),
    follow: bool = typer.Option(
        True, "--follow/--no-follow", help="Keep streaming until the run ends."
    ),
    node: int | None = NodeOpt,
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Stream the log of a run (reattaching from anywhere); end with its final state. A
    run across hosts: every node's lines behind [node K], or --node K's log alone."""
    check(host=host, run_id=run_id, workdir=workdir)
    if lines is not None and offset:
        fail("give --offset or --lines, not both.", 2)
    with DaemonClient.connect() as client:
        follow_log(client, host, run_id, workdir, offset, json, follow, lines=lines, node=node)


@friendly_errors
def status(
    host: str = HostArg,
    run_id: str = RunArg,
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Say how a run stands: running, completed, failed (exit N), stopped, lost, unknown."""
    check(host=host, run_id=run_id, workdir=workdir)
    with DaemonClient.connect() as client:
        show_status(client, host, run_id, workdir, json)


@friendly_errors
def metrics(
    host: str = HostArg,
    run_id: str = RunArg,
    follow: bool = typer.Option(
        False, "--follow/--no-follow", help="Keep showing new values until the run ends."
    ),
    workdir: str | None = WorkdirOpt,
    json: bool = JsonOpt,
) -> None:
    """Show what a run's log says: the latest value of each metric, a sparkline of the
    loss, progress and ETA; with --json the series, one object per step."""
    check(host=host, run_id=run_id, workdir=workdir)
    call = requests.run_metrics(host=host, run_id=run_id, workdir=workdir or None, follow=follow)
    with DaemonClient.connect() as client:
        if not follow:
            show_metrics(client.call(call), json)
            return
        follower = MetricsFollower(json)
        try:
            result = client.call(call, on_notification=follower)
        except KeyboardInterrupt:
            follower.end()
            raise typer.Exit(130) from None
        follower.end()
    if not json and result.run is not None:
        note(f"{run_id} on {host}: {state_text(result.run)}")
