"""Reading the far side's verdict on runs (status.sh rows) into RunInfo."""

from __future__ import annotations

import msgspec

from rtrain.daemon.remote.contract import RunRow
from rtrain.protocol.limit_words import limit_reason
from rtrain.protocol.messages import RunInfo, StoppedBy

from .context import now

# How far two looks may put the start of one stall apart (each says "still for N s" in
# whole seconds of the host's clock) and still be the same stall.
_SAME_STALL = 5.0
# The far side's detail of a stop its limits made: `limit: max_duration 21600`.
_LIMIT_STOPS: dict[str, StoppedBy] = {"max_duration": "max_duration", "stalled": "stall"}


def apply_row(base: RunInfo, row: RunRow) -> RunInfo | None:
    """The run as the far side's row says it stands; None when it is missing."""
    if not row.exists:
        return None
    reason, stopped_by = row.detail, None
    if row.state == "stopped" and reason and reason.startswith("limit: "):
        kind, _, seconds = reason.removeprefix("limit: ").partition(" ")
        if kind in _LIMIT_STOPS and seconds.isdigit():
            stopped_by = _LIMIT_STOPS[kind]
            reason = limit_reason(stopped_by, int(seconds))
    return msgspec.structs.replace(
        base,
        state=row.state,
        exit_code=row.exit_code,
        signal=row.signal,
        started_at=row.started_at or base.started_at,
        last_seen=now(),
        reason=reason,
        job_id=row.job_id or base.job_id,
        scheduler_state=row.scheduler_state,
        stalled_since=_stalled_since(base, row),
        stopped_by=stopped_by,
    )


def _stalled_since(base: RunInfo, row: RunRow) -> float | None:
    """Since when (the daemon's clock) the run has been still, as the host counts it."""
    if row.state != "running" or row.stalled_for is None:
        return None
    since = round(now() - row.stalled_for)
    if base.stalled_since is not None and abs(base.stalled_since - since) <= _SAME_STALL:
        return base.stalled_since
    return float(since)
