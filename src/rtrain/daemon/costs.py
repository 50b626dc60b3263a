"""What runs and hosts have cost: billed time times the host's price per hour.

A run is billed from each attempt's launch (setup included), or from the end of its wait
for GPUs when it waited, to its end, or to now while it runs; time queued is not billed. A
host is billed for the time rtrain saw it up (docs/cost-safety.md). The figures take the
host's price as it is now, in whatever unit it was given.
"""

from __future__ import annotations

import msgspec

from rtrain.protocol.messages import Attempt, HostInfo, RunInfo
from rtrain.protocol.run_states import is_ended


def billed_seconds(run: RunInfo, at: float) -> float:
    """Seconds `run` has been billed for as of `at` (epoch seconds), over every attempt."""
    attempts = run.attempts or [
        Attempt(number=1, state=run.state, started_at=run.started_at, running_at=run.started_at)
    ]
    total = 0.0
    for attempt in attempts:
        start = attempt.running_at
        if start is None:
            continue  # still queued, or never seen leaving the queue
        end = attempt.ended_at if is_ended(attempt.state) else None
        total += max(0.0, (end if end is not None else at) - start)
    return total


def priced_run(run: RunInfo, price_per_hour: float | None, at: float) -> RunInfo:
    """`run` with its billed seconds, and with its cost where the host has a price."""
    if run.started_at is None:
        return run  # never launched: nothing billed
    seconds = round(billed_seconds(run, at), 3)
    # From the seconds as shown, so that the two figures of an answer agree exactly.
    cost = None if price_per_hour is None else seconds / 3600 * price_per_hour
    return msgspec.structs.replace(
        run, billed_seconds=seconds, price_per_hour=price_per_hour, cost=cost
    )


def priced_host(
    info: HostInfo, price_per_hour: float | None, up_seconds: float, idle_seconds: float
) -> HostInfo:
    """`info` with the time rtrain saw the host up and idle, and what each cost."""
    up, idle = round(up_seconds, 3), round(idle_seconds, 3)
    return msgspec.structs.replace(
        info,
        price_per_hour=price_per_hour,
        up_seconds=up,
        idle_seconds=idle,
        cost=None if price_per_hour is None else up / 3600 * price_per_hour,
        idle_cost=None if price_per_hour is None else idle / 3600 * price_per_hour,
    )
