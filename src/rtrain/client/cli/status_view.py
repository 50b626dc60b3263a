"""`rtrain status`: shared by the typer command and the start-up fast path (no typer here).

Its caller checks the input and connects.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rtrain.client.run_state_text import attempt_text, state_text, state_with_silence
from rtrain.protocol import requests

from .output import note, print_json

if TYPE_CHECKING:
    from rtrain.client.daemon_client import DaemonClient


def sync_text(sync: Any) -> str:
    """When a run's tracker files last reached this machine's tracker, for stderr."""
    import time

    if sync.synced_at is None:
        last = "not synced yet"
    else:
        ago = max(0, round(time.time() - sync.synced_at))
        last = f"synced {time.strftime('%H:%M:%S', time.localtime(sync.synced_at))} ({ago} s ago)"
    extra = f"; {sync.summary}" if sync.summary else ""
    error = f"; the latest sync failed: {sync.error}" if sync.error else ""
    done = "; the last one, the run has ended" if getattr(sync, "done", False) else ""
    return f"{sync.tracker}: {last}{extra}{error}{done}"


def show_status(
    client: DaemonClient, host: str, run_id: str, workdir: str | None, json: bool
) -> None:
    run = client.call(requests.run_status(host=host, run_id=run_id, workdir=workdir or None)).run
    if json:
        print_json(run)
    elif sys.stdout.isatty():
        # People read more; a script reading a pipe compares the state alone.
        from .metrics_view import loss_text, progress_text

        extra = [progress_text(run.progress), loss_text(run.latest)]
        if run.gpus:
            extra.append("GPUs " + ",".join(str(i) for i in run.gpus))
        if run.cost is not None:
            from rtrain.protocol.durations import human_duration
            from rtrain.protocol.limit_words import cost_text

            billed = human_duration(run.billed_seconds or 0)
            extra.append(f"cost {cost_text(run.cost)} ({billed} at {run.price_per_hour:g}/h)")
        if len(run.attempts) > 1:
            extra.append(f"attempt {attempt_text(run.attempts[-1])}")
        print("  ".join([state_with_silence(run), *(e for e in extra if e)]))
        if run.nodes:
            print("nodes " + ", ".join(f"{i} {n.host}" for i, n in enumerate(run.nodes)))
        if run.after is not None:
            from .after_run_view import after_run_text

            print(after_run_text(run.after))
    else:
        print(state_text(run))
    if not json:
        if run.placement:
            note(run.placement)  # a pool's run: where it went and why
        for sync in run.synced:
            note(sync_text(sync))
