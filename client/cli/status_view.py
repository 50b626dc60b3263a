"""`rtrain status`: shared by the typer command and the start-up fast path (no typer here).

Its caller checks the input and connects (DaemonClient, or the fast path's QuickClient);
both clients' answers read alike, so what is printed is the same either way.
"""

from __future__ import annotations

import sys
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
    elif sys.stdout.isatty():
        # People read more; a script reading a pipe compares the state alone.
        from .metrics_view import loss_text, progress_text

        extra = [progress_text(run.progress), loss_text(run.latest)]
        if run.gpus:
            extra.append("GPUs " + ",".join(str(i) for i in run.gpus))
        print("  ".join([state_text(run), *(e for e in extra if e)]))
    else:
        print(state_text(run))
