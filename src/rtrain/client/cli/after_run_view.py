"""What a followed run's `--then-fetch/--then-terminate` plan does once the run has ended:
each stage as the daemon reaches it, until done or failed. Ctrl-C leaves it to the daemon."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rtrain.protocol import requests

from .output import note, print_json

if TYPE_CHECKING:
    from rtrain.client.daemon_client import DaemonClient

# A look at the daemon's registry (local, no ssh) this often.
LOOK_S = 0.5


def after_run_text(after: Any) -> str:
    """`then: fetching model`, `then: done: fetched ...; pod terminated`."""
    return f"then: {after.stage}" + (f": {after.detail}" if after.detail else "")


def state_with_plan(state: str, after: Any) -> str:
    """A run's state as a list shows it, with the word of a plan after the run that failed:
    `completed (then: failed)`; `rtrain status` tells why."""
    if after is not None and after.stage == "failed":
        return f"{state} (then: failed)"
    return state


def follow_after_run(client: DaemonClient, host: str, run_id: str, json: bool) -> Any:
    """Say each new word of the run's plan until it is over; its last state (None: the run
    is no longer known)."""
    said = None
    try:
        while True:
            runs = client.call(requests.runs_list(host=host)).runs
            run = next((r for r in runs if r.run_id == run_id), None)
            after = run.after if run is not None else None
            if after is None:
                return None
            text = after_run_text(after)
            if text != said:
                said = text
                if json:
                    print_json({"type": "after", "after": after})
                else:
                    note(text)
            if after.stage in ("done", "failed"):
                return after
            time.sleep(LOOK_S)
    except KeyboardInterrupt:
        note(
            f"\ndetached; the daemon goes on with what follows {run_id}.\n"
            f"  see:  rtrain status {host} {run_id}"
        )
        raise SystemExit(130) from None
