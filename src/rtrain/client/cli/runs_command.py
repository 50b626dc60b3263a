"""`rtrain runs`: the runs rtrain knows of."""

from __future__ import annotations

import typer

from rtrain.client.daemon_client import DaemonClient
from rtrain.client.run_state_text import TABLE_STATE, attempt_text, cut_text, table_state_text
from rtrain.protocol import requests
from rtrain.protocol.limit_words import cost_text
from rtrain.protocol.messages import RunState

from .after_run_view import state_with_plan
from .describe import table, when
from .metrics_view import (
    loss_text,
    progress_text,
)
from .output import friendly_errors, note, print_json
from .shared_options import JsonOpt


@friendly_errors
def runs(
    host: str | None = typer.Option(None, "--host", help="Only runs of this host."),
    state: RunState | None = typer.Option(None, "--state", help="Only runs in this state."),
    sweep: str | None = typer.Option(None, "--sweep", help="Only the runs of this sweep."),
    json: bool = JsonOpt,
) -> None:
    """List the runs rtrain knows of, newest first."""
    call = requests.runs_list(host=host, state=state, sweep=sweep)
    with DaemonClient.connect() as client:
        found = client.call(call).runs
    if json:
        print_json(found)
        return
    if not found and call.params:
        filters = " ".join(f"--{name} {value}" for name, value in call.params.items())
        note(f"no runs match {filters}; `rtrain runs` lists them all")
        return
    if not found:
        note("no runs yet; start one with `rtrain start HOST -- python train.py`")
        return
    headers = ["RUN", "HOST", "STATE", "STARTED", "PROGRESS", "LOSS"]
    rows = [
        [
            r.run_id,
            r.host,
            state_with_plan(table_state_text(r), r.after),
            when(r.started_at),
            progress_text(r.progress) or "-",
            loss_text(r.latest) or "-",
        ]
        for r in found
    ]
    for row, r in zip(rows, found, strict=True):
        if r.nodes:  # a run across hosts: every node's host
            row[1] = ",".join(node.host for node in r.nodes)
    # Attempts where a run has more than one (restart, or the daemon's --retry).
    if any(len(r.attempts) > 1 for r in found):
        headers.append("ATTEMPT")
        for row, r in zip(rows, found, strict=True):
            attempt = attempt_text(r.attempts[-1]) if len(r.attempts) > 1 else "-"
            row.append(cut_text(attempt, TABLE_STATE))
    # Costs where a host has a price (config.toml's price_per_hour, or hosts --price).
    if any(r.cost is not None for r in found):
        headers.append("COST")
        for row, r in zip(rows, found, strict=True):
            row.append(cost_text(r.cost) if r.cost is not None else "-")
    print(table(headers, rows))
