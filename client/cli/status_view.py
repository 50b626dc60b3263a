"""`rtrain status`: shared by the typer command and the start-up fast path (no typer here).

Its caller checks the input and connects (DaemonClient, or the fast path's QuickClient);
both clients' answers read alike, so what is printed is the same either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .describe import state_text
from .output import print_json

if TYPE_CHECKING:
    from rtrain.client.daemon_client import DaemonClient
    from rtrain.client.quick_rpc import QuickClient


def show_status(
    client: DaemonClient | QuickClient, host: str, run_id: str, workdir: str | None, json: bool
) -> None:
    params: dict[str, Any] = {"host": host, "runId": run_id}
    if workdir:
        params["workdir"] = workdir
    run = client.request("run/status", params).run
    if json:
        print_json(run)
    else:
        print(state_text(run))
