"""`rtrain status`: shared by the typer command and the start-up fast path (no typer here)."""

from __future__ import annotations

from typing import Any

from rtrain.client.daemon_client import DaemonClient

from .describe import state_text
from .input_checks import check
from .output import print_json


def show_status(host: str, run_id: str, workdir: str | None, json: bool) -> None:
    check(host=host, run_id=run_id, workdir=workdir)
    params: dict[str, Any] = {"host": host, "runId": run_id}
    if workdir:
        params["workdir"] = workdir
    with DaemonClient.connect() as client:
        run = client.request("run/status", params).run
    if json:
        print_json(run)
    else:
        print(state_text(run))
